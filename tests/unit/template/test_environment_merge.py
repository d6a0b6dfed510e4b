"""environment_files merged server-side as Heat's environment_util.merge_environments does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from libs.template import loader
from libs.template.environment import merge_environments
from libs.template.errors import (
    ConflictingMergeStrategyForParam,
    InvalidMergeStrategyForParam,
    UnhandledPythonError,
)
from services.api.faults import status_of

MERGE_DIR = Path(__file__).parent / "fixtures" / "environments" / "merge"

# Heat's own test schemata, written as HOT types.
TYPES = {"str_value1": "string", "str_value2": "string",
         "del_lst_value1": "comma_delimited_list", "del_lst_value2": "comma_delimited_list",
         "lst_value1": "comma_delimited_list", "lst_value2": "comma_delimited_list",
         "json_value1": "json", "json_value2": "json"}

OVERWRITTEN: dict[str, dict[str, Any]] = {"parameters": {
    "str_value1": "string3", "str_value2": "string4", "del_lst_value1": "5,6", "del_lst_value2": "7,8",
    "lst_value1": [5, 6], "json_value1": {"3": ["str3", "str4"]}, "json_value2": {"4": ["test3", "test4"]}},
    "resource_registry": {"test::R1": "OS::Heat::RandomString", "test::R2": "OS::Heat::None"},
    "parameter_defaults": {"lst_value2": [7, 8]}}


def fixture_files(strategies: dict[str, dict[str, str]]) -> dict[str, str]:
    """The fixture files as heatclient sends them (JSON), with merge strategies added."""
    files = {}
    for path in sorted(MERGE_DIR.glob("env_*.yaml")):
        env = loader.parse_environment(path.read_text())
        if path.stem in strategies:
            env["parameter_merge_strategies"] = strategies[path.stem]
        files[path.stem] = json.dumps(env)
    return files


def sections(**given: Any) -> dict[str, Any]:
    return loader.with_missing_sections(given)


@pytest.mark.parametrize(("names", "strategies", "expected"), [
    (["env_1", "env_2"], {}, OVERWRITTEN),
    (["env_1", "env_2"], {"env_1": {"default": "deep_merge"}}, {"parameters": {
        "json_value1": {"1": ["str1", "str2"], "3": ["str3", "str4"]},
        "json_value2": {"2": ["test1", "test2"], "4": ["test3", "test4"]},
        "del_lst_value1": "1,2,5,6", "del_lst_value2": "3,4,7,8", "lst_value1": [1, 2, 5, 6],
        "str_value1": "string1string3", "str_value2": "string2string4"},
        "resource_registry": OVERWRITTEN["resource_registry"],
        "parameter_defaults": {"lst_value2": [3, 4, 7, 8]}}),
    (["env_1", "env_2"], {"env_1": {"default": "overwrite", "lst_value1": "merge", "lst_value2": "merge",
                                    "json_value1": "deep_merge"}}, {"parameters": {
        **OVERWRITTEN["parameters"], "json_value1": {"1": ["str1", "str2"], "3": ["str3", "str4"]},
        "lst_value1": [1, 2, 5, 6]},
        "resource_registry": OVERWRITTEN["resource_registry"],
        "parameter_defaults": {"lst_value2": [3, 4, 7, 8]}}),
    # an unknown strategy name means the file's default
    (["env_1", "env_2"], {"env_1": {"default": "merge", "str_value1": "bogus"}}, {"parameters": {
        "json_value1": {"1": ["str1", "str2"], "3": ["str3", "str4"]},
        "json_value2": {"2": ["test1", "test2"], "4": ["test3", "test4"]},
        "del_lst_value1": "1,2,5,6", "del_lst_value2": "3,4,7,8", "lst_value1": [1, 2, 5, 6],
        "str_value1": "string1string3", "str_value2": "string2string4"},
        "resource_registry": OVERWRITTEN["resource_registry"],
        "parameter_defaults": {"lst_value2": [3, 4, 7, 8]}}),
    ([], {}, {}),
])
def test_heats_merge_cases(names: list[str], strategies: dict[str, dict[str, str]],
                           expected: dict[str, Any]) -> None:
    merged = merge_environments(names, fixture_files(strategies), sections(), TYPES)
    assert merged == sections(**expected)
    assert "parameter_merge_strategies" not in merged


@pytest.mark.parametrize(("names", "strategies", "message"), [
    (["env_1", "env_2", "env_3"],
     {"env_1": {"default": "overwrite", "lst_value1": "merge", "json_value1": "deep_merge"},
      "env_3": {"default": "overwrite", "lst_value1": "deep_merge", "json_value1": "merge"}},
     "Conflicting merge strategy 'deep_merge' for parameter 'lst_value1' in file 'env_3'."),
    # parameters and parameter_defaults share one strategy per name
    (["env_1", "env_2", "env_4"],
     {"env_1": {"default": "overwrite", "lst_value2": "merge"},
      "env_4": {"default": "overwrite", "lst_value2": "overwrite"}},
     "Conflicting merge strategy 'overwrite' for parameter 'lst_value2' in file 'env_4'."),
])
def test_conflicting_strategies(names: list[str], strategies: dict[str, dict[str, str]],
                                message: str) -> None:
    with pytest.raises(ConflictingMergeStrategyForParam) as info:
        merge_environments(names, fixture_files(strategies), sections(), TYPES)
    assert str(info.value) == message


# ---- inline cases: (base, [file texts], types) -> merged sections ---------------------------

def files_of(*texts: str) -> tuple[list[str], dict[str, str]]:
    names = [f"f{i}.yaml" for i in range(len(texts))]
    return names, dict(zip(names, texts, strict=True))


@pytest.mark.parametrize(("base", "texts", "types", "expected"), [
    # a file's parameters override the request's; with request parameters present,
    # names no template declares are dropped...
    ({"parameters": {"p": "cli", "q": "cli"}}, ["parameters: {p: file, unknown: 1}"],
     {"p": "string", "q": "string"}, {"parameters": {"p": "file", "q": "cli"}}),
    # ...without them, the first file's section is taken whole
    ({}, ["parameters: {p: file, unknown: 1}", "parameters: {other_unknown: 2}"], {"p": "string"},
     {"parameters": {"p": "file", "unknown": 1}}),
    # null values are skipped once something is there
    ({}, ["parameters: {p: a}", "parameters: {p: null}"], {"p": "string"}, {"parameters": {"p": "a"}}),
    ({"parameters": {"p": "cli"}}, ["parameters: {p: null}"], {"p": "string"}, {"parameters": {"p": "cli"}}),
    ({}, ["parameters: {p: null}"], {"p": "string"}, {"parameters": {"p": None}}),
    # merge by type
    ({}, ["parameter_merge_strategies: {default: merge}\nparameters: {s: a}", "parameters: {s: b}"],
     {"s": "string"}, {"parameters": {"s": "ab"}}),
    ({}, ["parameter_merge_strategies: {default: merge}\nparameters: {n: '3'}", "parameters: {n: '5'}"],
     {"n": "number"}, {"parameters": {"n": "35"}}),
    ({}, ["parameter_merge_strategies: {l: merge}\nparameters: {l: 'a,b'}", "parameters: {l: c}"],
     {"l": "CommaDelimitedList"}, {"parameters": {"l": "a,b,c"}}),
    ({}, ["parameter_merge_strategies: {j: merge}\nparameters: {j: {a: {x: 1}}}",
          "parameters: {j: {a: {y: 2}}}"],
     {"j": "json"}, {"parameters": {"j": {"a": {"y": 2}}}}),
    ({}, ["parameter_merge_strategies: {j: merge}\nparameters: {j: {a: 1}}", "parameters: {j: '{\"b\": 2}'}"],
     {"j": "Json"}, {"parameters": {"j": {"a": 1, "b": 2}}}),
    ({}, ["parameter_merge_strategies: {j: deep_merge}\nparameters: {j: {a: {x: [1], s: p, n: 1, keep: k}}}",
          "parameters: {j: {a: {x: [2], s: q, n: 2, new: {}, keep: null}}}"],
     {"j": "json"}, {"parameters": {"j": {"a": {"x": [1, 2], "s": "pq", "n": 2, "new": {}, "keep": "k"}}}}),
    # a strategy chosen by an earlier file carries on
    ({}, ["parameter_merge_strategies: {s: merge}\nparameters: {s: a}", "parameters: {s: b}",
          "parameter_defaults: {s: c}"],
     {"s": "string"}, {"parameters": {"s": "ab"}, "parameter_defaults": {"s": "c"}}),
    # other sections merge one level deep and skip nulls
    ({}, ["resource_registry: {OS::A: a.yaml, resources: {x: {hooks: pre-create}}}",
          "resource_registry: {OS::A: null, OS::B: b.yaml, resources: {y: {hooks: pre-update}}}"], {},
     {"resource_registry": {"OS::A": "a.yaml", "OS::B": "b.yaml",
                            "resources": {"y": {"hooks": "pre-update"}}}}),
    ({}, ["resource_registry: {OS::A: null}"], {}, {"resource_registry": {"OS::A": None}}),
    ({}, ["event_sinks: [{type: zaqar-queue, target: q}]", "encrypted_param_names: [a]"], {},
     {"event_sinks": [{"type": "zaqar-queue", "target": "q"}], "encrypted_param_names": ["a"]}),
    # empty sections change nothing
    ({"parameters": {"p": "cli"}}, ["parameters: {}\nresource_registry: {}"], {"p": "string"},
     {"parameters": {"p": "cli"}}),
])
def test_merge_quirks(base: dict[str, Any], texts: list[str], types: dict[str, str],
                      expected: dict[str, Any]) -> None:
    names, files = files_of(*texts)
    assert merge_environments(names, files, base, types) == sections(**expected)


@pytest.mark.parametrize(("texts", "types", "error", "error_type", "message"), [
    (["parameter_merge_strategies: {b: merge}\nparameters: {b: 'true'}", "parameters: {b: 'false'}"],
     {"b": "boolean"}, InvalidMergeStrategyForParam, "InvalidMergeStrategyForParam",
     "Invalid merge strategy 'merge' for parameter 'b'."),
    (["parameter_merge_strategies: {b: deep_merge}\nparameters: {b: 'true'}", "parameters: {b: 'false'}"],
     {"b": "boolean"}, InvalidMergeStrategyForParam, "InvalidMergeStrategyForParam",
     "Invalid merge strategy 'merge' for parameter 'b'."),
    (["parameter_merge_strategies: {b: merge}\nparameters: {b: true}", "parameters: {b: false}"],
     {"b": "boolean"}, UnhandledPythonError, "ValueError", "Invalid parameter in environment ."),
    (["parameter_merge_strategies: {n: merge}\nparameters: {n: 1}", "parameters: {n: 2}"],
     {"n": "number"}, UnhandledPythonError, "ValueError", "Invalid parameter in environment ."),
    # a strategy can be first named in a later file, for a parameter first seen there
    (["parameters: {s: x}", "parameter_merge_strategies: {n: merge}\nparameters: {n: '2'}"],
     {"n": "number", "s": "string"}, UnhandledPythonError, "TypeError",
     "unsupported operand type(s) for +: 'int' and 'str'"),
    (["parameter_merge_strategies: {j: merge}\nparameters: {j: {a: 1}}", "parameters: {j: 'not json'}"],
     {"j": "json"}, UnhandledPythonError, "ValueError",
     "Invalid parameter in environment Expecting value: line 1 column 1 (char 0)."),
    (["event_sinks: [{type: zaqar-queue, target: a}]", "event_sinks: [{type: zaqar-queue, target: b}]"],
     {}, UnhandledPythonError, "AttributeError", "'list' object has no attribute 'items'"),
    (["parameter_merge_strategies: {default: bogus}\nparameters: {p: a}",
      "parameter_merge_strategies: {p: overwrite}\nparameters: {p: b}"],
     {"p": "string"}, ConflictingMergeStrategyForParam, "ConflictingMergeStrategyForParam",
     "Conflicting merge strategy 'overwrite' for parameter 'p' in file 'f1.yaml'."),
    # a parameter an earlier file set has already chosen (implicitly) overwrite
    (["parameters: {s: a}", "parameter_merge_strategies: {s: merge}\nparameters: {s: b}"],
     {"s": "string"}, ConflictingMergeStrategyForParam, "ConflictingMergeStrategyForParam",
     "Conflicting merge strategy 'merge' for parameter 's' in file 'f1.yaml'."),
    (["outputs: {}"], {}, UnhandledPythonError, "ValueError", 'environment has wrong section "outputs"'),
    (["parameters:"], {}, UnhandledPythonError, "ValueError", 'environment has empty section "parameters"'),
    (["parameters: }"], {}, UnhandledPythonError, "ValueError",
     "while parsing a block node\nexpected the node content, but found '}'\n"
     '  in "<unicode string>", line 1, column 13:\n    parameters: }\n                ^'),
])
def test_merge_errors(texts: list[str], types: dict[str, str], error: type[Exception], error_type: str,
                      message: str) -> None:
    names, files = files_of(*texts)
    with pytest.raises(error) as info:
        merge_environments(names, files, None, types)
    assert str(info.value) == message
    assert getattr(info.value, "error_type", None) == error_type


def test_missing_file() -> None:
    with pytest.raises(UnhandledPythonError) as info:
        merge_environments(["env.yaml"], {}, None, {})
    assert (info.value.error_type, status_of(info.value), str(info.value)) == ("KeyError", 400, "'env.yaml'")


def test_base_is_not_mutated() -> None:
    base = {"parameters": {"l": [1]}}
    names, files = files_of("parameter_merge_strategies: {l: merge}\nparameters: {l: [2]}")
    merged = merge_environments(names, files, base, {"l": "comma_delimited_list"})
    assert merged["parameters"] == {"l": [1, 2]}
    assert base == {"parameters": {"l": [1]}}


def test_no_environment_files_fills_sections_only() -> None:
    assert merge_environments(None, {"f": "parameters: {a: 1}"}, {"parameters": {"p": 1}}, {}) == sections(
        parameters={"p": 1})
