"""Budgets on template data: depth and alias expansion from YAML events, value sizes in evaluation."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from libs import config
from libs.template import budgets, loader
from libs.template.environment import merge_environments
from libs.template.errors import RequestLimitExceeded, StackValidationFailed, UnhandledPythonError
from libs.template.functions import base
from tests.unit.template.function_support import FakeResolver, parse

VERSION = "heat_template_version: 2018-08-31\n"


@pytest.fixture
def small() -> Iterator[budgets.Budgets]:
    """Budgets small enough to reach with small data; the defaults come back after."""
    before = budgets.current()
    chosen = budgets.Budgets(max_depth=10, max_alias_nodes=50, max_value_size=1000, max_evaluation_size=3000)
    budgets.configure(chosen)
    yield chosen
    budgets.configure(before)


def _laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * 9)}]" for n in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _nested(levels: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def _events(text: str) -> None:
    budgets.check_yaml_events(text, loader.HeatYamlLoader, "The template")


def test_a_billion_laughs_is_refused_from_its_events() -> None:
    with pytest.raises(RequestLimitExceeded, match="expands YAML aliases to more than 100000 nodes"):
        _events(_laughs(8))


def test_aliases_within_the_budget_load(small: budgets.Budgets) -> None:
    # Each alias of the 9-node list adds 9: 27 nodes in all, under 50; three more pass it.
    text = "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: *a\nc: [*a, *a]\n"
    _events(text)
    assert yaml.load(text, Loader=loader.HeatYamlLoader)["c"][1] == [1, 2, 3, 4, 5, 6, 7, 8]
    with pytest.raises(RequestLimitExceeded, match="more than 50 nodes"):
        _events(text + "d: [*a, *a, *a]\n")


@pytest.mark.parametrize("text", [
    "[" * 50_000 + "]" * 50_000,
    VERSION + "outputs:\n  o:\n    value:\n      " + "- " * 50_000 + "x\n",
    '{"a": ' * 50_000 + "1" + "}" * 50_000,
], ids=["flow", "block", "json"])
def test_fifty_thousand_levels_are_refused_without_recursing(text: str) -> None:
    # The C composer would recurse 50,000 deep and crash the process; json.loads would
    # raise RecursionError. Both are refused before either recursion can happen.
    with pytest.raises(RequestLimitExceeded, match="nested more than 100 levels deep"):
        loader.parse_template(text)


def test_depth_is_counted_exactly_and_through_aliases(small: budgets.Budgets) -> None:
    _events("[" * 10 + "]" * 10)
    with pytest.raises(RequestLimitExceeded):
        _events("[" * 11 + "]" * 11)
    # An anchor 6 deep used 5 deep is 11 deep once expanded.
    deep = "[" * 6 + "]" * 6
    with pytest.raises(RequestLimitExceeded, match="nested more than 10 levels"):
        _events(f"- &d {deep}\n- " + "[" * 4 + "*d" + "]" * 4 + "\n")


def test_environments_are_checked_too() -> None:
    with pytest.raises(RequestLimitExceeded, match="The environment expands YAML aliases"):
        loader.parse_environment("parameter_defaults:\n" + "".join(
            f"  {line}\n" for line in _laughs(8).splitlines()))


def test_built_data_depth_is_checked_without_recursion() -> None:
    budgets.check_depth(_nested(100), "template")
    with pytest.raises(RequestLimitExceeded, match="template is nested more than 100 levels deep"):
        budgets.check_depth(_nested(200_000), "template")
    with pytest.raises(ValueError, match="The value is nested"):
        budgets.check_depth({"a": _nested(101)}, "The value", error=ValueError)


def test_size_stops_counting_at_the_limit() -> None:
    assert budgets.size_of({"ab": [1, "cd"]}, 100) == 2 + 2 + 2 * 2 + 8 + 2
    assert budgets.size_of(["x" * 10] * 10**6, 1000) == 1001


def _resolve(snippet: Any) -> Any:
    return base.resolve(parse(snippet, "2018-08-31"), FakeResolver())


def test_a_function_value_over_budget_fails_naming_the_function(small: budgets.Budgets) -> None:
    assert _resolve({"list_join": ["", ["x" * 400, "y" * 400]]}) == "x" * 400 + "y" * 400
    too_large = r"^list_join: the result is larger than the limit of 1000"
    with pytest.raises(budgets.ValueTooLarge, match=too_large):
        _resolve({"list_join": ["", ["x" * 600, "y" * 600]]})


@pytest.mark.parametrize("snippet", [
    {"str_replace": {"template": "$x" * 1000, "params": {"$x": "v" * 100_000}}},
    {"repeat": {"template": "<%a%><%b%><%c%>",
                "for_each": {f"<%{k}%>": [str(i) for i in range(200)] for k in "abc"}}},
    {"list_join": ["d" * 100_000, ["a"] * 1000]},
], ids=["str_replace", "repeat", "list_join"])
def test_growing_functions_are_refused_before_building(snippet: dict[str, Any]) -> None:
    name = next(iter(snippet))
    with pytest.raises(budgets.ValueTooLarge, match=rf"^{name}: the result would be larger than the limit"):
        _resolve(snippet)


def test_running_out_of_stack_is_the_inputs_fault() -> None:
    # str_replace substitutes placeholder by placeholder, recursing once per placeholder.
    many = {"str_replace": {"template": "x", "params": {f"k{n}": "v" for n in range(3000)}}}
    with pytest.raises(budgets.ValueTooLarge, match=r"^str_replace: too many values nested or placeholders"):
        _resolve(many)


def test_one_evaluation_sums_every_function_value(small: budgets.Budgets) -> None:
    # Each join is 800, under the value budget; four of them pass the 3000 per evaluation.
    join = {"list_join": ["", ["x" * 400, "y" * 400]]}
    assert len(_resolve([join, join, join])) == 3
    with pytest.raises(budgets.ValueTooLarge, match="per evaluation"):
        _resolve([join, join, join, join])
    # The next evaluation starts again from nothing.
    assert len(_resolve([join, join])) == 2


def test_text_with_nul_is_refused_naming_where() -> None:
    with pytest.raises(StackValidationFailed, match=r"template\.resources: text may not contain a NUL"):
        loader.check_storable({"template": {"resources": {"a\0b": {}}}}, ())
    with pytest.raises(StackValidationFailed, match=r"outputs\.o\.value\[1\]: text may not"):
        loader.parse_template(VERSION + 'outputs: {o: {value: [a, "b\\0"]}}')


def test_budgets_come_from_the_environment() -> None:
    env = {"EMBER_MAX_TEMPLATE_DEPTH": "50", "EMBER_MAX_YAML_ALIAS_NODES": "10",
           "EMBER_MAX_VALUE_SIZE": "2048", "EMBER_MAX_EVALUATION_SIZE": "4096"}
    assert config.load(env).budgets == budgets.Budgets(50, 10, 2048, 4096)
    assert config.load({}).budgets == budgets.Budgets()
    with pytest.raises(config.ConfigError, match="EMBER_MAX_TEMPLATE_DEPTH"):
        config.load({"EMBER_MAX_TEMPLATE_DEPTH": "5000"})


def test_the_deepest_allowed_template_goes_through_the_recursive_code() -> None:
    # The ceiling leaves room for the Python walkers (parse, resolve, copies) below the
    # interpreter's recursion limit.
    deepest = dataclasses.replace(budgets.current(), max_depth=budgets.DEPTH_CEILING)
    before = budgets.current()
    budgets.configure(deepest)
    try:
        # The template, outputs and o maps above, the function's map and two lists below.
        levels = budgets.DEPTH_CEILING - 6
        value = _nested(levels, {"list_join": [",", ["a", "b"]]})
        template = loader.parse_template(VERSION + "outputs: {o: {value: " + yaml.safe_dump(
            value, default_flow_style=True, width=10**6).strip() + "}}")
        assert _resolve(template["outputs"]["o"]["value"]) == _nested(levels, "a,b")
    finally:
        budgets.configure(before)


def test_a_merged_json_parameter_nested_too_deep_is_the_environments_fault() -> None:
    deep = "[" * 5000 + "]" * 5000
    files = {"e.yaml": "parameter_merge_strategies: {p: merge}\nparameters: {p: '" + deep + "'}\n"}
    base = {"parameters": {"p": "[]"}}
    # Heat's engine raises the ValueError, and its API answers it as it is (here a 400).
    with pytest.raises(UnhandledPythonError, match=r"^Invalid parameter in environment The value is nested "
                                                   r"more than 100 levels deep\.$"):
        merge_environments(["e.yaml"], files, base, {"p": "json"})
