"""The step decision table: create, update in place, replace, keep, delete, retain."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.step import Decision, RowState, decide


def _row(**over: Any) -> RowState:
    base: dict[str, Any] = dict(id=1, name="r", type="OS::Heat::TestResource", action="CREATE",
                                status="COMPLETE", is_current=True, traversal_id="t0", template_id="tpl0",
                                properties={"value": "a"})
    base.update(over)
    return RowState(**base)


def _replace_if_value(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return bool(new.get("update_replace")) and old.get("value") != new.get("value")


CASES: list[tuple[str, str, dict[str, Any], dict[str, Any], Decision]] = [
    # kind, action, row overrides, decide kwargs, expected
    ("u", "CREATE", dict(action="INIT", properties=None, traversal_id=None), dict(new_properties={}),
     Decision("create")),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}), Decision("noop")),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b"}), Decision("update", changed=("value",))),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b", "update_replace": True},
                            needs_replace=_replace_if_value), Decision("replace")),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "a"}), Decision("replace")),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="OS::Heat::None"),
     Decision("replace")),
    ("u", "UPDATE", dict(traversal_id="t1", status="IN_PROGRESS", action="UPDATE"),
     dict(new_properties={}), Decision("continue", action="UPDATE")),
    ("u", "UPDATE", dict(traversal_id="t1", template_id="tpl1"), dict(new_properties={}),
     Decision("done")),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"x": 1}, never_updates=True,
                                                new_type="OS::Heat::TestResource"), Decision("noop")),
    ("c", "UPDATE", {}, dict(in_template=True), Decision("noop")),
    ("c", "UPDATE", {}, dict(in_template=False), Decision("delete")),
    ("c", "UPDATE", dict(is_current=False), dict(in_template=True), Decision("delete")),
    ("c", "DELETE", {}, dict(in_template=False), Decision("delete")),
    ("c", "DELETE", dict(deletion_policy="Retain"), dict(in_template=False), Decision("retain")),
    ("c", "DELETE", dict(action="INIT"), dict(in_template=False), Decision("forget")),
    ("c", "DELETE", dict(traversal_id="t1", action="DELETE", status="IN_PROGRESS"),
     dict(in_template=False), Decision("continue", action="DELETE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(new_properties={"value": "b"}), Decision("wait", action="CREATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(in_template=False), Decision("wait", action="CREATE")),
    ("c", "SUSPEND", {}, dict(in_template=True), Decision("suspend")),
    ("c", "SUSPEND", dict(action="SUSPEND"), dict(in_template=True), Decision("noop")),
    ("u", "RESUME", dict(action="SUSPEND"), {}, Decision("resume")),
    ("u", "RESUME", {}, {}, Decision("noop")),
    ("u", "CHECK", {}, {}, Decision("check")),
    # Replace or update follows what the names resolve to (Heat compares the classes).
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="My::Test", same_implementation=True),
     Decision("update")),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource",
                             same_implementation=False), Decision("replace")),
    ("u", "UPDATE", dict(type="My::Nothing"), dict(new_properties={}, new_type="OS::Heat::None",
                                                   same_implementation=True, never_updates=True),
     Decision("noop")),
    # Every update reaches a nested stack; a failed one that exists is updated in place.
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, nests=True), Decision("update")),
    ("u", "UPDATE", dict(status="FAILED", physical_id="child"),
     dict(new_properties={"value": "a"}, nests=True), Decision("update")),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "a"}, nests=True),
     Decision("replace")),
    ("u", "UPDATE", dict(status="FAILED", action="CHECK", physical_id="child"),
     dict(new_properties={"value": "a"}, nests=True), Decision("replace")),
    ("u", "UPDATE", dict(status="FAILED", action="CHECK", physical_id="child"),
     dict(new_properties={"value": "a"}, nests=True, nested_check_failed=True), Decision("update")),
]


@pytest.mark.parametrize(("kind", "action", "row", "kwargs", "expected"), CASES)
def test_decide(kind: str, action: str, row: dict[str, Any], kwargs: dict[str, Any],
                expected: Decision) -> None:
    kwargs.setdefault("in_template", True)
    assert decide(kind, action, "t1", "tpl1", _row(**row), **kwargs) == expected
