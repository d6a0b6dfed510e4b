"""Which resources an update leaves alone, known to the planner before any node runs."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest

from libs.engine.status import Action
from libs.engine.step import RowState
from libs.engine.unchanged import TypeRules, same_definitions, unchanged
from libs.template.parameters import Parameters
from libs.template.request import parameter_schemas
from libs.template.resolution import StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template


def _definition(resources: dict[str, Any]) -> StackDefinition:
    tmpl = Template({"heat_template_version": "2018-08-31", "resources": resources}, {})
    return StackDefinition(tmpl, Parameters(parameter_schemas(tmpl), dialect=tmpl.version.kind,
                                            stack_name="s", stack_id="id", project_id="p"))


def _row(name: str, type_: str = "Ember::Value", props: Mapping[str, Any] | None = None, *,
         action: str = "CREATE", status: str = "COMPLETE", external_id: str | None = None) -> RowState:
    return RowState(id=hash(name) & 0xFFFF, name=name, type=type_, action=action, status=status,
                    is_current=True, traversal_id="old", template_id="old", properties=props,
                    external_id=external_id)


def _validate(values: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    if values.get("value") == "bad":
        raise ValueError(f"{name}: bad value")
    return dict(values)


def _rules(_name: str, type_name: str) -> TypeRules:
    return TypeRules(never_updates=type_name == "Ember::Never",
                     needs_replace=lambda old, new: old.get("fixed") != new.get("fixed"),
                     validate=_validate)


def _value(v: Any, **more: Any) -> dict[str, Any]:
    return {"type": "Ember::Value", "properties": {"value": v}, **more}


CASES = [
    pytest.param({"a": _value("x"), "b": _value({"get_resource": "a"})},
                 {"a": _row("a", props={"value": "x"}), "b": _row("b", props={"value": "ref-a"})},
                 ["a", "b"], id="nothing changed"),
    pytest.param({"a": _value("y"), "b": _value("z", depends_on=["a"])},
                 {"a": _row("a", props={"value": "x"}), "b": _row("b", props={"value": "z"})},
                 [], id="a changed, so b (which reads nothing of a) still waits for it"),
    pytest.param({"a": _value("x"), "b": _value("y"), "c": _value({"get_resource": "b"})},
                 {"a": _row("a", props={"value": "x"}), "b": _row("b", props={"value": "old"}),
                  "c": _row("c", props={"value": "ref-b"})},
                 ["a"], id="a dependent of a changed resource is not settled"),
    pytest.param({"a": _value("x")}, {"a": _row("a", props={"value": "x"}, status="FAILED")},
                 [], id="a failed row is replaced, not settled"),
    pytest.param({"a": _value("x")}, {"a": _row("a", props={"value": "x"}, status="IN_PROGRESS")},
                 [], id="a row under way waits for its step"),
    pytest.param({"a": _value("x")}, {"a": _row("a", props={"value": "x"}, action="INIT")},
                 [], id="a row never created is created"),
    pytest.param({"a": _value("bad")}, {"a": _row("a", props={"value": "bad"})},
                 [], id="a property error fails on its node, with Heat's reason"),
    pytest.param({"a": {"type": "Ember::Never", "properties": {"value": "new"}}},
                 {"a": _row("a", "Ember::Never", props={})},
                 ["a"], id="a type that never updates is left alone whatever changed"),
    pytest.param({"a": {"type": "Ember::Other", "properties": {"value": "x"}}},
                 {"a": _row("a", props={"value": "x"})},
                 [], id="a new type is a replacement"),
    pytest.param({"a": _value("x"), "new": _value("n")}, {"a": _row("a", props={"value": "x"})},
                 ["a"], id="a resource new to the stack has no row to settle"),
    pytest.param({"a": _value("changed", external_id="x")},
                 {"a": _row("a", props={"value": "x"}, action="CHECK", external_id="x")},
                 ["a"], id="an external resource keeping its id is left alone whatever changed"),
    pytest.param({"a": _value("x", external_id="x")}, {"a": _row("a", props={"value": "x"})},
                 [], id="an external_id added is refused on its node"),
    pytest.param({"a": _value("x")}, {"a": _row("a", props={"value": "x"}, external_id="x")},
                 [], id="an external_id removed is refused on its node"),
]


@pytest.mark.parametrize(("resources", "rows", "expected"), CASES)
def test_unchanged(resources: dict[str, Any], rows: dict[str, RowState], expected: list[str]) -> None:
    data = StaticResourceData({n: f"ref-{n}" for n in rows}, {n: {} for n in rows})
    assert unchanged(_definition(resources), Action.UPDATE, rows, data, _rules) == expected


def test_excluded_names_and_their_dependents_are_not_settled() -> None:
    resources = {"a": _value("x"), "b": _value({"get_resource": "a"}), "c": _value("c")}
    rows = {"a": _row("a", props={"value": "x"}), "b": _row("b", props={"value": "ref-a"}),
            "c": _row("c", props={"value": "c"})}
    data = StaticResourceData({n: f"ref-{n}" for n in rows}, {n: {} for n in rows})
    assert unchanged(_definition(resources), Action.UPDATE, rows, data, _rules,
                     exclude=frozenset({"a"})) == ["c"]


def _rules_by_implementation(_name: str, type_name: str) -> TypeRules:
    # "My::*" names are aliases of Ember::Value; Ember::Nest makes a nested stack.
    implementation = "value" if type_name.startswith("My::") or type_name == "Ember::Value" else type_name
    return TypeRules(never_updates=False, needs_replace=lambda old, new: False, validate=_validate,
                     always_updates=type_name == "Ember::Nest", implementation=implementation)


def _recorded(row: RowState) -> object:
    return "value" if row.type.startswith("My::") or row.type == "Ember::Value" else row.type


IMPLEMENTATION_CASES = [
    pytest.param({"a": _value("x")}, {"a": _row("a", props={"value": "x"})}, ["a"],
                 id="same name, same implementation: settled"),
    pytest.param({"a": {"type": "My::Value", "properties": {"value": "x"}}},
                 {"a": _row("a", props={"value": "x"})}, [],
                 id="another name of the same implementation is an update in place, on its node"),
    pytest.param({"a": _value("x")}, {"a": _row("a", "Ember::Other", props={"value": "x"})}, [],
                 id="another implementation is a replacement"),
    pytest.param({"n": {"type": "Ember::Nest", "properties": {"value": "x"}}, "b": _value("y")},
                 {"n": _row("n", "Ember::Nest", props={"value": "x"}), "b": _row("b", props={"value": "y"})},
                 ["b"], id="a nested stack always gets its node: its own resources decide"),
]


@pytest.mark.parametrize(("resources", "rows", "expected"), IMPLEMENTATION_CASES)
def test_unchanged_compares_implementations(resources: dict[str, Any], rows: dict[str, RowState],
                                            expected: list[str]) -> None:
    data = StaticResourceData({n: f"ref-{n}" for n in rows}, {n: {} for n in rows})
    assert unchanged(_definition(resources), Action.UPDATE, rows, data, _rules_by_implementation,
                     implementation_of=_recorded) == expected


def test_a_rollback_leaves_a_row_whose_replacement_failed_to_its_node() -> None:
    # Its node gives back what the failed replacement took (Heat's restore_prev_rsrc), for a type
    # whose replacement takes from it.
    def rules(_name: str, _type: str) -> TypeRules:
        return TypeRules(never_updates=False, needs_replace=lambda old, new: False, validate=_validate,
                         prepares_replace=True)

    resources = {"a": _value("x"), "b": _value("y")}
    rows = {"a": dataclasses.replace(_row("a", props={"value": "x"}), replacement="FAILED"),
            "b": _row("b", props={"value": "y"})}
    data = StaticResourceData({n: f"ref-{n}" for n in rows}, {n: {} for n in rows})
    assert unchanged(_definition(resources), Action.ROLLBACK, rows, data, rules) == ["b"]
    assert unchanged(_definition(resources), Action.UPDATE, rows, data, rules) == ["a", "b"]
    assert unchanged(_definition(resources), Action.ROLLBACK, rows, data, _rules) == ["a", "b"]


def test_names_already_known_unchanged_are_not_resolved_and_count_for_their_dependents() -> None:
    resources = {"a": _value("bad"), "b": _value({"get_resource": "a"})}
    rows = {"a": _row("a", props={"value": "x"}), "b": _row("b", props={"value": "ref-a"})}
    data = StaticResourceData({n: f"ref-{n}" for n in rows}, {n: {} for n in rows})
    # "a" would fail its validation if it were resolved again; known unchanged, it is not.
    assert unchanged(_definition(resources), Action.UPDATE, rows, data, _rules, already={"a"}) == ["b"]


def _members(*names: str, value: str = "v") -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {n: _value(f"{value}-{n}") for n in names}}


@pytest.mark.parametrize(("new", "rows", "exclude", "expected"), [
    # One member replaced by another: the rest converged with the old template as written.
    (_members("0", "2", "3"), {n: _row(n) for n in "012"}, (), ["0", "2"]),
    # A definition written otherwise, a row that did not complete, one excluded (it reads or is read).
    (_members("0", "1", value="w"), {n: _row(n) for n in "01"}, (), []),
    (_members("0", "1"), {"0": _row("0", status="FAILED"), "1": _row("1", action="INIT")}, (), []),
    (_members("0", "1"), {n: _row(n) for n in "01"}, ("1",), ["0"]),
    # A row of another desired state, a nested stack.
    (_members("0", "1", "2"), {"1": dataclasses.replace(_row("1"), template_id="older"),
                               "2": _row("2", type_="Ember::Nest")}, (), []),
    # Anything else of the template changed (its version: other functions): nothing is known.
    ({**_members("0"), "heat_template_version": "2018-08-31"}, {"0": _row("0")}, (), []),
    ({**_members("0"), "description": "said otherwise"}, {"0": _row("0")}, (), ["0"]),
])
def test_same_definitions(new: dict[str, Any], rows: dict[str, RowState], exclude: tuple[str, ...],
                          expected: list[str]) -> None:
    assert same_definitions(_members("0", "1", "2"), new, rows, old_template_id="old", exclude=exclude,
                            always_updates=lambda _name, type_name: type_name == "Ember::Nest") == expected


@pytest.mark.parametrize(("resources", "expected"), [
    # Reads another resource as written (an attribute, a dependency), or read by none.
    ({"0": _value({"get_attr": ["2", "value"]}), "1": {**_value("v"), "depends_on": ["2"]}, "2": _value("v")},
     ["2"]),
    # A type the implicit rules order after others (a port after its network's subnets).
    ({"0": _value("v"), "1": {"type": "OS::Neutron::Port"}}, ["0"]),
    # A string that spells a function is not one.
    ({"0": _value("get_attr"), "1": _value('"get_attr":')}, ["0", "1"]),
])
def test_what_requires_another_is_left_to_the_usual_comparison(resources: dict[str, Any],
                                                              expected: list[str]) -> None:
    template = {"heat_template_version": "2016-10-14", "resources": resources}
    assert same_definitions(template, template, {n: _row(n) for n in resources}, old_template_id="old",
                            exclude=(), always_updates=lambda _name, _type: False,
                            ruled_types={"OS::Neutron::Port"}) == expected
