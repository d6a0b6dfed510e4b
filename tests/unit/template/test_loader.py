"""Template and environment text parse as Heat's server parses them, with Heat's messages."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template import loader
from libs.template.errors import InvalidEnvironment, RequestLimitExceeded, TemplateParseError

HOT = "heat_template_version: 2021-04-16\n"


# ---- template values ---------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    # YAML 1.1 through the safe loader
    ("a: 010", 8),
    ("a: 0x1f", 31),
    ("a: 1:30", 90),                  # sexagesimal
    ("a: yes", True),
    ("a: Off", False),
    ("a: 1e3", "1e3"),                # YAML 1.1 floats need a dot...
    ("a: 1.0e3", "1.0e3"),            # ...and a signed exponent
    ("a: 1.0e+3", 1000.0),
    ("a: .inf", float("inf")),
    ("a: ~", None),
    # timestamps stay the text they were written as, even when tagged
    ("a: 2013-05-23", "2013-05-23"),
    ("a: 2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("a: !!timestamp 2001-01-01", "2001-01-01"),
    ("a: !!str 010", "010"),
], ids=repr)
def test_yaml_scalars(text: str, expected: Any) -> None:
    assert loader.parse_template(HOT + text)["a"] == expected


@pytest.mark.parametrize(("text", "expected"), [
    # JSON is tried first, so JSON-only spellings keep their JSON meaning
    ('{"heat_template_version": "2015-04-30", "a": 1e3}', 1000.0),
    ('{"heat_template_version": "2015-04-30", "a": "010"}', "010"),
    ('{"heat_template_version": "2015-04-30", "a": 1, "a": 2}', 2),
    # not JSON: falls back to YAML
    ("{heat_template_version: 2015-04-30, a: 010}", 8),
])
def test_json_first(text: str, expected: Any) -> None:
    assert loader.parse_template(text)["a"] == expected


def test_yaml_date_version_is_a_string() -> None:
    assert loader.parse_template("heat_template_version: 2013-05-23") == {
        "heat_template_version": "2013-05-23"}


@pytest.mark.parametrize("key", loader.VERSION_KEYS)
def test_any_version_key_is_enough(key: str) -> None:
    # The value is not looked at here: the template class judges it.
    assert loader.parse_template(f"{key}: 7") == {key: 7}


def test_bytes_are_utf8_text() -> None:
    assert loader.parse_template((HOT + "description: é").encode()) == {
        "heat_template_version": "2021-04-16", "description": "é"}


# ---- template errors ----------------------------------------------------------------

@pytest.mark.parametrize(("text", "error", "message"), [
    ("", TemplateParseError, "Template format version not found."),
    ("{}", TemplateParseError, "Template format version not found."),
    ("Parameters: {}\nResources: {}\n", TemplateParseError, "Template format version not found."),
    ("just string", TemplateParseError, "The template is not a JSON object or YAML mapping."),
    ('["foo" , "bar"]', TemplateParseError, "The template is not a JSON object or YAML mapping."),
    ("42", TemplateParseError, "The template is not a JSON object or YAML mapping."),
    ("{test", TemplateParseError,
     "Error parsing template [root stack] while parsing a flow mapping\n"
     '  in "<unicode string>", line 1, column 1:\n'
     "    {test\n"
     "    ^\n"
     "expected ',' or '}', but got '<stream end>'\n"
     '  in "<unicode string>", line 1, column 6:\n'
     "    {test\n"
     "         ^"),
])
def test_template_errors(text: str, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        loader.parse_template(text)
    assert str(info.value) == message


def test_yaml_error_names_the_nested_template() -> None:
    with pytest.raises(TemplateParseError, match=r"^Error parsing template file:///t/nested.yaml "):
        loader.parse_template("a: [", url="file:///t/nested.yaml")


@pytest.mark.parametrize("source", [
    HOT + "description: " + "x" * 40,
    {"heat_template_version": "2021-04-16", "description": "x" * 40},
])
def test_too_large(source: str | dict[str, Any]) -> None:
    # Heat measures characters of the text, or of str() of an already-parsed map.
    size = len(str(source))
    with pytest.raises(RequestLimitExceeded) as info:
        loader.parse_template(source, max_size=size - 1)
    assert str(info.value) == (f"Request limit exceeded: Template size ({size} bytes) exceeds "
                               f"maximum allowed size ({size - 1} bytes).")
    assert info.value.error_type == "RequestLimitExceeded"
    loader.parse_template(source, max_size=size)


def test_parsed_map_is_not_version_checked() -> None:
    # Heat's API hands a JSON-object template straight to the engine.
    assert loader.parse_template({"resources": {}}) == {"resources": {}}


# ---- environments --------------------------------------------------------------------

@pytest.mark.parametrize(("source", "expected"), [
    (None, {}),
    ("", {}),
    ("# only a comment\n", {}),
    ("parameters: {a: 010}\n", {"parameters": {"a": 8}}),
    ("parameter_defaults: {day: 2013-05-23}", {"parameter_defaults": {"day": "2013-05-23"}}),
    ("parameter_merge_strategies: {default: merge}",
     {"parameter_merge_strategies": {"default": "merge"}}),
    ('{"event_sinks": [{"type": "zaqar-queue", "target": "q"}]}',
     {"event_sinks": [{"type": "zaqar-queue", "target": "q"}]}),
    ({"parameters": {"a": 1}}, {"parameters": {"a": 1}}),
])
def test_environment_parses(source: Any, expected: dict[str, Any]) -> None:
    assert loader.parse_environment(source) == expected


@pytest.mark.parametrize(("source", "message"), [
    ("parameters: {}\nresource_regis: {}\n", 'environment has wrong section "resource_regis"'),
    ("parameters:\n", 'environment has empty section "parameters"'),
    ("resource_registry: ~\n", 'environment has empty section "resource_registry"'),
    ("1: {}", 'environment has wrong section "1"'),
    ({"parameters": {}, "outputs": {}}, 'environment has wrong section "outputs"'),
    ({"event_sinks": None}, 'environment has empty section "event_sinks"'),
    ("just string", "The environment is not a valid YAML mapping data type."),
    ('["foo" , "bar"]', "The environment is not a valid YAML mapping data type."),
    ("parameters: }\n",
     "while parsing a block node\n"
     "expected the node content, but found '}'\n"
     '  in "<unicode string>", line 1, column 13:\n'
     "    parameters: }\n"
     "                ^"),
])
def test_environment_errors(source: Any, message: str) -> None:
    with pytest.raises(InvalidEnvironment) as info:
        loader.parse_environment(source)
    assert str(info.value) == message
    assert info.value.error_type == "HTTPBadRequest"


def test_missing_sections_filled_except_merge_strategies() -> None:
    assert loader.with_missing_sections({"parameters": {"a": 1}}) == {
        "parameters": {"a": 1}, "resource_registry": {}, "parameter_defaults": {},
        "encrypted_param_names": [], "event_sinks": []}
    empty = loader.with_missing_sections(loader.parse_environment(""))
    written = loader.parse_environment(
        "parameters: {}\nencrypted_param_names: []\nparameter_defaults: {}\n"
        "event_sinks: []\nresource_registry: {}\n")
    assert empty == written


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("heat_template_version: 2016-10-14\nresources: {}\noutputs:\n  o: {value: {1: one, 1.5: x}}\n",
         {"1": "one", "1.5": "x"}),
        ("heat_template_version: 2016-10-14\nresources: {}\noutputs:\n  o: {value: {true: t, null: n}}\n",
         {"true": "t", "null": "n"}),
        ("heat_template_version: 2016-10-14\nresources: {}\noutputs:\n  o: {value: [{2: two}]}\n",
         [{"2": "two"}]),
    ],
)
def test_map_keys_become_strings_as_after_heats_rpc(text: str, expected: object) -> None:
    assert loader.parse_template(text)["outputs"]["o"]["value"] == expected
