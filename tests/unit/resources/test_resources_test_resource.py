"""OS::Heat::TestResource driven step by step with a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.status import Action
from libs.resources.steps import KEEP, Done, Failed, StepResult, Wait
from libs.resources.test_resource import FOREVER_POLL_SECS
from libs.template.errors import StackValidationFailed
from tests.unit.resources.resource_support import drive, make_ctx, plugin

TEST = plugin("OS::Heat::TestResource")
PID = "st-r1-abcdefghijkl"
FAILED = Failed("Test Resource failed r1", "ValueError")


def _props(raw: dict[str, Any]) -> dict[str, Any]:
    return TEST.validate(raw, resource_name="r1")


@pytest.mark.parametrize(
    ("raw", "times", "expected"),
    [
        ({}, [100], [Done(PID, {"value": "test_string"})]),
        ({"value": "hello"}, [100], [Done(PID, {"value": "hello"})]),
        ({"value": ""}, [100], [Done(PID, {"value": ""})]),
        # the id and value are recorded before the wait, then the clock decides
        ({"wait_secs": 5}, [100, 103, 104.5, 105],
         [Wait(5, {"value": "test_string"}, PID), Wait(2), Wait(0.5), Done()]),
        ({"wait_secs": 2.5}, [100, 101, 110], [Wait(2.5, {"value": "test_string"}, PID), Wait(1.5), Done()]),
        # a per-action wait overrides wait_secs, even 0; other actions' entries do not count
        ({"wait_secs": 10, "action_wait_secs": {"create": 2}}, [100, 102],
         [Wait(2, {"value": "test_string"}, PID), Done()]),
        ({"wait_secs": 5, "action_wait_secs": {"create": 0}}, [100], [Done(PID, {"value": "test_string"})]),
        ({"wait_secs": 3, "action_wait_secs": {"update": 1}}, [100, 101, 103],
         [Wait(3, {"value": "test_string"}, PID), Wait(2), Done()]),
        # failing: nothing recorded, and only after the wait
        ({"fail": True}, [100], [FAILED]),
        ({"fail": "TRUE", "wait_secs": 4}, [100, 102, 104], [Wait(4), Wait(2), FAILED]),
        # -1 (any negative number) waits until cancelled
        ({"wait_secs": -1}, [100, 1e6, 1e9],
         [Wait(FOREVER_POLL_SECS, {"value": "test_string"}, PID), Wait(FOREVER_POLL_SECS),
          Wait(FOREVER_POLL_SECS)]),
        ({"action_wait_secs": {"create": -5}, "fail": True}, [100, 1e6], [Wait(FOREVER_POLL_SECS)] * 2),
    ],
)
def test_create(raw: dict[str, Any], times: list[float], expected: list[StepResult]) -> None:
    assert drive(TEST, Action.CREATE, make_ctx(_props(raw)), times) == expected


def test_create_failure_names_the_resource() -> None:
    ctx = make_ctx(_props({"fail": True}), resource_name="oops")
    [result] = drive(TEST, Action.CREATE, ctx, [100])
    assert isinstance(result, Failed)
    reason = result.status_reason("resources", "oops")
    assert reason == "ValueError: resources.oops: Test Resource failed oops"


def test_create_step_is_repeatable() -> None:
    ctx = make_ctx(_props({"wait_secs": 5}))
    assert TEST.start(Action.CREATE, ctx) == TEST.start(Action.CREATE, ctx)


@pytest.mark.parametrize(
    ("old", "new", "times", "expected"),
    [
        # a new value is stored at once, then the update takes its time
        ({}, {"value": "new", "wait_secs": 5}, [100, 104, 105], [Wait(5, {"value": "new"}), Wait(1), Done()]),
        ({}, {"value": "new", "action_wait_secs": {"update": 3}, "wait_secs": 9}, [100, 103],
         [Wait(3, {"value": "new"}), Done()]),
        ({}, {"value": "new"}, [100], [Done(KEEP, {"value": "new"})]),
        # only a changed, non-empty value takes time (and only it is stored)
        ({"wait_secs": 1}, {"wait_secs": 5}, [100], [Done()]),
        ({"value": "old"}, {"value": "", "wait_secs": 5}, [100], [Done()]),
        ({"value": "same"}, {"value": "same", "wait_secs": 5}, [100], [Done()]),
        # fail: the value is not stored, and any update fails after its wait
        ({}, {"value": "new", "fail": True, "wait_secs": 2}, [100, 102], [Wait(2), FAILED]),
        ({}, {"fail": True, "wait_secs": 2}, [100], [FAILED]),
        ({"fail": True}, {"fail": True}, [100], [FAILED]),
        ({}, {"value": "new", "wait_secs": -1}, [100, 1e7],
         [Wait(FOREVER_POLL_SECS, {"value": "new"}), Wait(FOREVER_POLL_SECS)]),
    ],
)
def test_update(old: dict[str, Any], new: dict[str, Any], times: list[float],
                expected: list[StepResult]) -> None:
    ctx = make_ctx(_props(new), old_properties=_props(old), physical_id=PID, data={"value": "x"})
    assert drive(TEST, Action.UPDATE, ctx, times) == expected


@pytest.mark.parametrize(
    ("raw", "times", "expected"),
    [
        ({}, [100], [Done()]),
        ({"wait_secs": 3}, [100, 101, 103], [Wait(3), Wait(2), Done()]),
        ({"wait_secs": 3, "action_wait_secs": {"delete": 1}}, [100, 101], [Wait(1), Done()]),
        # deleting never fails, so a failing resource can be cleaned up
        ({"fail": True}, [100], [Done()]),
        ({"fail": True, "wait_secs": 2}, [100, 102], [Wait(2), Done()]),
        ({"wait_secs": -1}, [100, 1e6], [Wait(FOREVER_POLL_SECS)] * 2),
    ],
)
def test_delete(raw: dict[str, Any], times: list[float], expected: list[StepResult]) -> None:
    assert drive(TEST, Action.DELETE, make_ctx(_props(raw), physical_id=PID), times) == expected


@pytest.mark.parametrize(
    ("action", "physical_id", "raw", "expected"),
    [
        (Action.CHECK, PID, {}, Done()),
        (Action.CHECK, PID, {"fail": True}, Done()),
        (Action.CHECK, None, {}, Failed("Resource not created", "Exception")),
        (Action.SUSPEND, PID, {"wait_secs": 5, "fail": True}, Done()),
        (Action.RESUME, PID, {"wait_secs": 5, "fail": True}, Done()),
    ],
)
def test_other_actions(action: Action, physical_id: str | None, raw: dict[str, Any],
                       expected: StepResult) -> None:
    assert TEST.start(action, make_ctx(_props(raw), physical_id=physical_id)) == expected


@pytest.mark.parametrize(
    ("old", "new", "replace"),
    [
        ({}, {}, False),
        ({}, {"value": "b"}, False),
        ({"update_replace": True}, {"value": "b", "update_replace": True}, True),
        ({}, {"value": "b", "update_replace": True}, True),
        # the new update_replace decides
        ({"update_replace": True}, {"value": "b"}, False),
        ({}, {"update_replace": True}, False),
        ({}, {"update_replace_value": "x"}, True),
        ({"update_replace_value": "x"}, {"update_replace_value": "x", "value": "v"}, False),
        ({}, {"wait_secs": 3, "fail": True, "action_wait_secs": {"create": 1}, "client_name": "c"}, False),
    ],
)
def test_needs_replace(old: dict[str, Any], new: dict[str, Any], replace: bool) -> None:
    assert TEST.needs_replace(_props(old), _props(new)) is replace


@pytest.mark.parametrize(
    ("physical_id", "data", "reference", "output"),
    [
        (PID, {"value": "stored"}, PID, "stored"),
        # a failed create has neither id nor value
        (None, {}, "r1", None),
    ],
)
def test_reference_and_attributes(physical_id: str | None, data: dict[str, str], reference: str,
                                  output: str | None) -> None:
    props = _props({"value": "ignored"})
    assert TEST.reference_id(physical_id, data, resource_name="r1") == reference
    assert TEST.attribute("output", physical_id, data, props) == output
    assert TEST.attribute("show", physical_id, data, props) is None
    assert TEST.all_attributes(physical_id, data, props) == {"output": output}
    assert not TEST.has_attribute("value")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"fail": "yes"}, 'Property error: resources.r1.properties.fail: "yes" is not a valid boolean'),
        ({"wait_secs": "soon"},
         "Property error: resources.r1.properties.wait_secs: could not convert string to float: 'soon'"),
        ({"action_wait_secs": {"suspend": 1}},
         "Property error: resources.r1.properties.action_wait_secs: Unknown Property suspend"),
        ({"constraint_prop_secs": -1},
         "Property error: resources.r1.properties.constraint_prop_secs: sleep length must be non-negative"),
        ({"value": ["a"]},
         "Property error: resources.r1.properties.value: Value must be a string; got ['a']"),
        ({"values": "a"}, "Property error: resources.r1.properties: Unknown Property values"),
    ],
)
def test_validation(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        _props(raw)
    assert str(caught.value) == message


def test_defaults() -> None:
    assert _props({}) == {
        "constraint_prop_secs": 0, "attr_wait_secs": 0, "value": "test_string", "update_replace_value": None,
        "fail": False, "update_replace": False, "wait_secs": 0, "action_wait_secs": None, "client_name": "",
        "entity_name": "",
    }
    # a null value (say from a false `if`) is the default again
    assert _props({"value": None})["value"] == "test_string"
