"""The function framework as HOT uses it: error paths, dependency paths, parse-time choices.

What the YAML tables cannot show: Heat's nesting of validation errors, the
``(in <path>)`` of references under a root, what reaches the resolver, and the
few messages that embed process-specific text.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from libs.template import errors, versions
from libs.template.functions import base, hot
from libs.template.functions.hot_yaql import LIMIT_ITERATORS, MEMORY_QUOTA
from tests.unit.template.function_support import FakeResolver, make_resolver, parse


class Fails(base.Function):
    """Validation fails with whatever error its argument names."""

    def validate(self) -> None:
        kind = self.args
        if kind == "reference":
            raise errors.InvalidTemplateReference("x", "unknown")
        if kind == "assert":
            raise AssertionError("a bug")
        if kind == "key":
            raise KeyError("why")
        raise ValueError("bad value")

    def result(self, resolver: base.Resolver) -> Any:
        return None


class Wrap(base.Function):
    """Validates its arguments like any function."""

    def result(self, resolver: base.Resolver) -> Any:
        return base.resolve(self.args, resolver)


CTX = base.ParseContext({"fails": Fails, "wrap": Wrap}, {}, "test")


def _validate_error(snippet: Any, path: Any = ()) -> str:
    with pytest.raises(errors.StackValidationFailed) as caught:
        base.validate(base.parse(snippet, "", CTX), path)
    return str(caught.value)


# ---- validation paths, as Heat's function.validate builds them ----------------------------

@pytest.mark.parametrize(("snippet", "path", "message"), [
    ({"fails": "value"}, (), "fails: bad value"),
    ({"fails": "value"}, "outputs.o.value", "outputs.o.value.fails: bad value"),
    ({"a": [1, {"fails": "value"}]}, ("Properties",), "Properties.a[1].fails: bad value"),
    ([{"fails": "value"}], ("Properties", "nets"), "Properties.nets[0].fails: bad value"),
    # A TemplateError becomes StackValidationFailed too, as in Heat.
    ({"fails": "reference"}, "p",
     'p.fails: The specified reference "x" (in unknown) is incorrect.'),
    # KeyError shows as its repr.
    ({"fails": "key"}, "p", "p.fails: 'why'"),
    # An error in a nested call keeps the nested call's relative path in the message.
    ({"wrap": [",", [{"fails": "value"}]]}, "p", "p.wrap: [1][0].fails: bad value"),
    ({"wrap": {"x": {"wrap": {"fails": "value"}}}}, "p", "p.wrap: x.wrap: fails: bad value"),
])
def test_validation_error_paths(snippet: Any, path: Any, message: str) -> None:
    assert _validate_error(snippet, path) == message


def test_validation_error_path_items_are_kept() -> None:
    with pytest.raises(errors.StackValidationFailed) as caught:
        base.validate(base.parse({"n": [{"fails": "value"}]}, "", CTX), ("Properties",))
    assert caught.value.path == ("Properties", "n[0]", "fails")
    assert caught.value.detail == "bad value"


def test_assertion_errors_are_not_wrapped() -> None:
    with pytest.raises(AssertionError):
        base.validate(base.parse({"fails": "assert"}, "", CTX))


def test_parse_shows_key_errors_as_their_repr() -> None:
    with pytest.raises(errors.StackValidationFailed) as caught:
        parse({"repeat": {"template": "x"}}, "2016-10-14", path="resources.r.properties.p")
    assert str(caught.value).startswith(
        "resources.r.properties.p.repeat: '\"repeat\" syntax should be repeat:\\n")


# ---- dependency paths ------------------------------------------------------------------

def _refs(snippet: Any, date: str = "2016-10-14", root: str | None = "w.Properties",
          resolver: FakeResolver | None = None) -> list[tuple[str, str, str]]:
    parsed = parse(snippet, date, resolver, path="resources.w.properties")
    return [(r.resource, r.path, r.function_path) for r in base.dependencies(parsed, root)]


def test_reference_paths_are_heats() -> None:
    snippet = {"value": {"get_resource": "a"},
               "v": {"list_join": [",", [{"get_attr": ["b", "x"]}]]},
               "nets": [{"port": {"get_resource": "c"}}]}
    assert _refs(snippet) == [
        ("a", "w.Properties.value", "resources.w.properties.value.get_resource"),
        ("b", "w.Properties.v.list_join[1][0]", "resources.w.properties.v.list_join[1][0].get_attr"),
        ("c", "w.Properties.nets[0].port", "resources.w.properties.nets[0].port.get_resource"),
    ]


def test_reference_paths_without_a_root_are_parse_locations() -> None:
    assert _refs({"value": {"get_resource": "a"}}, root=None) == [
        ("a", "resources.w.properties.value", "resources.w.properties.value.get_resource")]


def test_reference_in_get_attr_arguments() -> None:
    snippet = {"v": {"get_attr": [{"get_resource": "a"}, "x"]}}
    resolver = make_resolver({"refs": {"a": "b"}})
    assert [r[:2] for r in _refs(snippet, resolver=resolver)] == [
        ("a", "w.Properties.v.get_attr[0]"), ("b", "w.Properties.v")]


def test_computed_names_need_a_resolver_at_parse_time() -> None:
    snippet = {"v": {"get_resource": {"get_param": "name"}}}
    assert _refs(snippet) == []
    resolver = make_resolver({"params": {"name": "a"}})
    assert [r[:2] for r in _refs(snippet, resolver=resolver)] == [("a", "w.Properties.v")]


def test_location() -> None:
    parsed = parse({"get_param": "x"}, "2016-10-14", path="outputs.o.value")
    assert (parsed.path, parsed.location) == ("outputs.o.value.get_param", "outputs.o.value")
    assert parse({"get_param": "x"}, "2016-10-14", path="").location == ""


# ---- what reaches the resolver -------------------------------------------------------

class Recording(FakeResolver):
    def __init__(self) -> None:
        super().__init__(attrs={"r": {"list": ["a", "b"], "none": None}})
        self.calls: list[tuple[str, str, list[Any]]] = []

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        self.calls.append((resource, attribute, list(path)))
        return super().attribute(resource, attribute, path)


@pytest.mark.parametrize(("date", "path_sent"), [
    ("2013-05-23", []),  # the whole attribute, then the path is selected here
    ("2014-10-16", [1]),  # the resource selects (a ResourceGroup reads resource.0.x its way)
    ("2021-04-16", [1]),
])
def test_get_attr_path_goes_to_the_resource_from_2014_10_16(date: str, path_sent: list[Any]) -> None:
    resolver = Recording()
    assert base.resolve(parse({"get_attr": ["r", "list", 1]}, date), resolver) == "b"
    assert resolver.calls == [("r", "list", path_sent)]


def test_get_attr_2013_null_attribute_skips_the_path() -> None:
    resolver = Recording()
    assert base.resolve(parse({"get_attr": ["r", "none", 0]}, "2013-05-23"), resolver) is None


def test_str_split_leaves_a_parameter_list_alone() -> None:
    resolver = make_resolver({"params": {"args": [",", "a,b", 1]}})
    parsed = parse({"str_split": {"get_param": "args"}}, "2016-10-14")
    assert base.resolve(parsed, resolver) == "b"
    assert resolver.params["args"] == [",", "a,b", 1]


# ---- if without a resolver at parse time ---------------------------------------------

def test_if_decides_when_resolved_without_a_parse_resolver() -> None:
    parsed = parse({"if": ["c", {"get_attr": ["a", "x"]}, {"get_attr": ["b", "y"]}]}, "2016-10-14")
    assert isinstance(parsed, hot.If) and parsed.chosen is None
    assert sorted(base.dep_attrs(parsed, "a")) == ["x"]
    assert sorted(base.dep_attrs(parsed, "b")) == ["y"]
    for holds, expected in ((True, 1), (False, 2)):
        resolver = make_resolver({"conditions": {"c": holds}, "attrs": {"a": {"x": 1}, "b": {"y": 2}}})
        assert parsed.holds(resolver) is holds
        assert base.resolve(parsed, resolver) == expected


def test_if_parsed_with_a_resolver_keeps_one_branch() -> None:
    resolver = make_resolver({"conditions": {"c": False}})
    parsed = parse({"if": ["c", {"get_attr": ["a", "x"]}, {"get_attr": ["b", "y"]}]}, "2016-10-14",
                   resolver)
    assert isinstance(parsed, hot.If) and parsed.chosen is False
    assert list(base.dep_attrs(parsed, "a")) == []
    assert list(base.dep_attrs(parsed, "b")) == ["y"]


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), (None, True), ("yes_cond", True), ("no_cond", False)])
def test_condition_holds(value: Any, expected: bool) -> None:
    resolver = make_resolver({"conditions": {"yes_cond": True, "no_cond": False}})
    assert hot.condition_holds(value, resolver) is expected


@pytest.mark.parametrize("value", [1, 0.5, [1], {"a": 1}, "unknown"])
def test_condition_holds_rejects(value: Any) -> None:
    with pytest.raises(ValueError) as caught:
        hot.condition_holds(value, FakeResolver())
    assert str(caught.value) == f'Invalid condition "{value}"'


# ---- odds and ends ---------------------------------------------------------------------

def test_digest_unknown_algorithm_lists_what_this_python_has() -> None:
    parsed = parse({"digest": ["invalid_algorithm", "foobar"]}, "2015-04-30")
    with pytest.raises(ValueError) as caught:
        base.resolve(parsed, FakeResolver())
    assert str(caught.value) == f"Algorithm must be one of {hashlib.algorithms_available}"


def test_yaql_limits_are_heats_defaults() -> None:
    assert (LIMIT_ITERATORS, MEMORY_QUOTA) == (200, 10000)


@pytest.mark.parametrize(("value", "error", "message"), [
    ("http://x", AttributeError, "'str' object has no attribute 'get'"),
    (["a"], AttributeError, "'list' object has no attribute 'get'"),
    (5, TypeError, "argument of type 'int' is not iterable"),
    ("a-host", TypeError, "string indices must be integers, not 'str'"),
])
def test_make_url_resolved_without_validation(value: Any, error: type[Exception], message: str) -> None:
    # What Heat's MakeURL.result does with arguments that are no map: Python's own errors.
    parsed = parse({"make_url": {"get_param": "u"}}, "2017-09-01")
    with pytest.raises(error) as caught:
        base.resolve(parsed, make_resolver({"params": {"u": value}}))
    assert type(caught.value) is error
    assert str(caught.value) == message


def test_removed_function_result_is_the_call_itself() -> None:
    parsed = parse({"Ref": {"get_param": "p"}}, "2016-10-14")
    assert base.resolve(parsed, make_resolver({"params": {"p": "v"}})) == {"Ref": "v"}


@pytest.mark.parametrize(("value", "path", "expected"), [
    ({"a": [1, 2]}, ["a", 1], 2),
    ({"a": [1, 2]}, ["a", "1"], None),
    ({"a": [1, 2]}, ["b"], None),
    ("abc", [0], "a"),
    (5, [0], None),
    ({"a": 1}, [1.5], None),
    ([1], [], [1]),
])
def test_select_path(value: Any, path: list[Any], expected: Any) -> None:
    assert hot.select_path(value, path) == expected


def test_json_text_is_pythons_sorted_json() -> None:
    assert hot.json_text({"b": "é", "a": [1, None, True]}) == '{"a": [1, null, true], "b": "\\u00e9"}'


# ---- how functions show in messages, and get_attr's resource check ----------------------------


def test_repr_is_heats_with_the_value() -> None:
    resolver = make_resolver({"params": {"p": "v"}})
    parsed = parse({"get_param": "p"}, "2016-10-14", resolver)
    assert repr(parsed) == "<heat.engine.hot.functions.GetParam {get_param: 'p'} -> 'v'>"


def test_repr_without_a_value() -> None:
    # Heat shows ??? when resolving fails with TypeError/ValueError; without a resolver
    # there is no value to show either.
    assert repr(parse({"list_join": [1, ["a"]]}, "2016-10-14", make_resolver({}))) == (
        "<heat.engine.hot.functions.JoinMultiple {list_join: [1, ['a']]} -> ???>")
    assert repr(parse({"get_param": "p"}, "2016-10-14")) == (
        "<heat.engine.hot.functions.GetParam {get_param: 'p'} -> ???>")


def test_repr_of_if_is_the_branch_taken() -> None:
    resolver = make_resolver({"conditions": {"c": False}, "params": {"p": "v"}})
    parsed = parse({"if": ["c", "yes", {"get_param": "p"}]}, "2016-10-14", resolver)
    assert repr(parsed) == ("<heat.engine.hot.functions.If {if: ['c', 'yes', {'get_param': 'p'}]} -> "
                            "<heat.engine.hot.functions.GetParam {get_param: 'p'} -> 'v'>>")


def test_repr_lets_other_failures_through() -> None:
    # As Heat's: the failure then replaces the message that embeds the function.
    parsed = parse({"get_param": "p"}, "2016-10-14", make_resolver({}))
    with pytest.raises(errors.UserParameterMissing):
        repr(parsed)


def test_repr_of_cfn_functions_names_heats_modules() -> None:
    ctx = versions.lookup({"AWSTemplateFormatVersion": "2010-09-09"}).parse_context(
        resource_names=frozenset({"server"}))
    assert repr(base.parse({"Ref": "server"}, "o", ctx)) == (
        "<heat.engine.hot.functions.GetResource {Ref: 'server'} -> ???>")
    assert repr(base.parse({"Fn::Base64": "x"}, "o", ctx)) == (
        "<heat.engine.cfn.functions.Base64 {Fn::Base64: 'x'} -> ???>")


@pytest.mark.parametrize("snippet", [
    {"get_attr": ["nope", "a"]},
    {"get_attr": [{"get_param": "name"}, "a"]},
    {"list_join": [",", [{"get_attr": ["nope", "a", 0]}]]},
])
def test_get_attr_validation_looks_its_resource_up_when_the_stack_is_known(snippet: Any) -> None:
    resolver = make_resolver({"params": {"name": "nope"}})
    spec = versions.lookup({"heat_template_version": "2016-10-14"})
    ctx = dataclasses.replace(spec.parse_context(resolver), has_resource=lambda name: name == "server")
    parsed = base.parse(snippet, "outputs.o.value", ctx)
    with pytest.raises(errors.StackValidationFailed) as caught:
        base.validate(parsed, "outputs.o.value")
    assert str(caught.value).endswith('get_attr: The specified reference "nope" (in unknown) is incorrect.')
    # Without the stack's resources, only resolving can tell.
    base.validate(parse(snippet, "2016-10-14", resolver), "outputs.o.value")


@pytest.mark.parametrize(("date", "snippet", "keys"), [
    ("2016-10-14", {"get_attr": ["s", "a"]}, [("s", "a")]),
    ("2016-10-14", {"get_attr": ["s", "a", 0, "k"]}, [("s", ("a", 0, "k"))]),
    ("2013-05-23", {"get_attr": ["s", "a", 0]}, [("s", "a")]),
    ("2016-10-14", {"get_attr": ["s"]}, [("s", base.ALL_ATTRIBUTES)]),
    ("2016-10-14", {"get_attr": [{"get_param": "n"}, {"get_param": "p"}]}, [("s", "a")]),
    ("2016-10-14", {"get_attr": ["s", {"get_param": "missing"}]}, []),
    ("2016-10-14", {"if": ["c", {"get_attr": ["s", "a"]}, {"get_attr": ["t", "b"]}]}, [("t", "b")]),
    ("2016-10-14", {"list_join": [",", [{"get_attr": ["s", "a"]}, {"get_attr": ["t", ["x"]]}]]},
     [("s", "a"), ("t", ["x"])]),
])
def test_all_dep_attrs_are_heats_keys(date: str, snippet: Any, keys: list[Any]) -> None:
    resolver = make_resolver({"params": {"n": "s", "p": "a"}, "conditions": {"c": False}})
    assert list(base.all_dep_attrs(parse(snippet, date, resolver))) == keys
