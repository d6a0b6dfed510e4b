"""OS::Heat::Value (type only validates) and OS::Heat::None (accepts anything, does nothing)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from libs.engine.status import Action
from libs.resources.properties import UNKNOWN
from libs.resources.steps import Done, StepResult
from libs.template.errors import StackValidationFailed
from tests.unit.resources.resource_support import drive, make_ctx, plugin

VALUE = plugin("OS::Heat::Value")
NONE = plugin("OS::Heat::None")
PREFIX = "Property error: resources.v.properties"


# ---- Value ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"value": "x"}, {"value": "x", "type": None}),
        ({"value": {"a": [1]}}, {"value": {"a": [1]}, "type": None}),
        # the type only checks: the value stays as given
        ({"value": "42", "type": "number"}, {"value": "42", "type": "number"}),
        ({"value": 12, "type": "string"}, {"value": 12, "type": "string"}),
        ({"value": "TRUE", "type": "boolean"}, {"value": "TRUE", "type": "boolean"}),
        ({"value": ["a", "b"], "type": "comma_delimited_list"},
         {"value": ["a", "b"], "type": "comma_delimited_list"}),
        ({"value": {"a": 1}, "type": "json"}, {"value": {"a": 1}, "type": "json"}),
        # null is given, not missing, whatever the type
        ({"value": None}, {"value": None, "type": None}),
        ({"value": None, "type": "number"}, {"value": None, "type": "number"}),
        ({"value": None, "type": "json"}, {"value": None, "type": "json"}),
        ({"value": UNKNOWN, "type": "number"}, {"value": UNKNOWN, "type": "number"}),
        ({"value": "abc", "type": UNKNOWN}, {"value": "abc", "type": UNKNOWN}),
    ],
)
def test_value_validation(raw: dict[str, Any], expected: dict[str, Any]) -> None:
    assert VALUE.validate(raw, resource_name="v") == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, f"{PREFIX}: Property value not assigned"),
        ({"type": "string"}, f"{PREFIX}: Property value not assigned"),
        ({"value": "a,b", "type": "comma_delimited_list"}, f"{PREFIX}.value: \"'a,b'\" is not a list"),
        ({"value": '{"a": 1}', "type": "json"}, f'{PREFIX}.value: "{{"a": 1}}" is not a map'),
        ({"value": "abc", "type": "number"}, f"{PREFIX}.value: could not convert string to float: 'abc'"),
        ({"value": {"one": "croissant"}, "type": "number"},
         f"{PREFIX}.value: int() argument must be a string, a bytes-like object or a real number, "
         "not 'dict'"),
        ({"value": "yes", "type": "boolean"}, f'{PREFIX}.value: "yes" is not a valid boolean'),
        ({"value": 1, "type": "boolean"}, f'{PREFIX}.value: "1" is not a valid boolean'),
        ({"value": [1], "type": "string"}, f"{PREFIX}.value: Value must be a string; got [1]"),
        # an unknown type leaves the value unchecked and fails by itself
        ({"value": [1], "type": "integer"},
         f'{PREFIX}.type: "integer" is not an allowed value '
         '["string", "number", "comma_delimited_list", "json", "boolean"]'),
        ({"value": 1, "extra": 2}, f"{PREFIX}: Unknown Property extra"),
    ],
)
def test_value_validation_errors(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        VALUE.validate(raw, resource_name="v")
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("action", "physical_id", "expected"),
    [
        (Action.CREATE, None, Done("st-v-abcdefghijkl")),
        (Action.UPDATE, "st-v-abcdefghijkl", Done()),
        (Action.DELETE, "st-v-abcdefghijkl", Done()),
        (Action.SUSPEND, "st-v-abcdefghijkl", Done()),
        (Action.CHECK, "st-v-abcdefghijkl", Done(reason="CHECK not supported for OS::Heat::Value")),
    ],
)
def test_value_steps(action: Action, physical_id: str | None, expected: StepResult) -> None:
    props = VALUE.validate({"value": 1}, resource_name="v")
    ctx = make_ctx(props, resource_name="v", physical_id=physical_id)
    assert drive(VALUE, action, ctx, [100]) == [expected]


@pytest.mark.parametrize(
    ("raw", "attribute"),
    [
        ({"value": "42", "type": "number"}, "42"),
        ({"value": 12, "type": "string"}, 12),
        ({"value": None}, None),
        ({"value": {"k": ["v"]}, "type": "json"}, {"k": ["v"]}),
    ],
)
def test_value_attribute(raw: dict[str, Any], attribute: Any) -> None:
    props = VALUE.validate(raw, resource_name="v")
    assert VALUE.attribute("value", "pid", {}, props) == attribute
    assert VALUE.all_attributes("pid", {}, props) == {"value": attribute}
    assert VALUE.reference_id("pid", {}, resource_name="v") == "pid"
    assert VALUE.reference_id(None, {}, resource_name="v") == "v"


@pytest.mark.parametrize(
    ("old", "new"),
    [({"value": 1}, {"value": 2}), ({"value": 1}, {"value": 1, "type": "number"}),
     ({"value": "a", "type": "string"}, {"value": {"a": 1}, "type": "json"})],
)
def test_value_updates_in_place(old: dict[str, Any], new: dict[str, Any]) -> None:
    before, after = VALUE.validate(old, resource_name="v"), VALUE.validate(new, resource_name="v")
    assert VALUE.needs_update(before, after)
    assert not VALUE.needs_replace(before, after)


# ---- None ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "raw", [None, {}, {"flavor": "m1.small", "networks": [{"port": UNKNOWN}]}, {"anything": object()}],
)
def test_none_accepts_any_properties(raw: dict[str, Any] | None) -> None:
    assert NONE.validate(raw, resource_name="n") == {}


def test_none_create() -> None:
    [first] = drive(NONE, Action.CREATE, make_ctx({}, resource_name="n", seed=1), [100])
    [again] = drive(NONE, Action.CREATE, make_ctx({}, resource_name="n", seed=1), [100])
    assert first == again
    assert isinstance(first, Done) and isinstance(first.physical_id, str)
    assert uuid.UUID(first.physical_id).version == 4
    assert first.data == {"is_placeholder": "True"}


def test_none_create_keeps_a_recorded_id() -> None:
    ctx = make_ctx({}, resource_name="n", physical_id="0b0e1d4c-9a52-4f0a-8f55-3a3c3d7f0e11")
    assert NONE.start(Action.CREATE, ctx) == Done("0b0e1d4c-9a52-4f0a-8f55-3a3c3d7f0e11",
                                                  {"is_placeholder": "True"})


@pytest.mark.parametrize(
    ("action", "expected"),
    [
        (Action.UPDATE, Done()),
        (Action.DELETE, Done()),
        (Action.RESUME, Done()),
        (Action.CHECK, Done(reason="CHECK not supported for OS::Heat::None")),
    ],
)
def test_none_other_actions(action: Action, expected: StepResult) -> None:
    assert NONE.start(action, make_ctx({}, physical_id="pid")) == expected


@pytest.mark.parametrize(
    ("old", "new", "definition_changed"),
    [({}, {}, False), ({}, {}, True), ({"a": 1}, {"a": 2}, True)],
)
def test_none_never_updates(old: dict[str, Any], new: dict[str, Any], definition_changed: bool) -> None:
    assert NONE.never_updates
    assert not NONE.needs_update(old, new, definition_changed)
    assert not NONE.needs_replace(old, new)


@pytest.mark.parametrize("name", ["first_address", "show", "anything", "networks"])
def test_none_attributes(name: str) -> None:
    assert NONE.has_attribute(name)
    assert NONE.attribute(name, "pid", {}, {}) is None
    assert NONE.all_attributes("pid", {}, {}) == {}


@pytest.mark.parametrize(("physical_id", "reference"), [("pid", "pid"), (None, "n")])
def test_none_reference_id(physical_id: str | None, reference: str) -> None:
    assert NONE.reference_id(physical_id, {}, resource_name="n") == reference
