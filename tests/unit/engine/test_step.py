"""The step decision table: create, update in place, replace, keep, delete, retain."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.step import Decision, RowState, attempted_action, decide, preempted_reason


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
    # A delete cancels any older action under way (Heat's stack delete stops every worker).
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(in_template=False), Decision("delete", preempts="CREATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", deletion_policy="Retain"),
     dict(in_template=False), Decision("retain", preempts="UPDATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="DELETE"),
     dict(in_template=False), Decision("delete", preempts="DELETE")),
    # A newer update preempts a nested stack's older create or update, and updates it in place...
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(new_properties={"value": "b"}, new_type="OS::Heat::TestResource", nests=True),
     Decision("update", changed=("value",), preempts="UPDATE")),
    ("u", "ROLLBACK", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE", physical_id="child"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource", nests=True),
     Decision("update", preempts="CREATE")),
    # ...or deletes it, when it is cleaned up...
    ("c", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=False, nests=True), Decision("delete", preempts="UPDATE")),
    # ...but waits for a create that has no nested stack yet, a type that changes, any other type's
    # action (it finishes that resource), and in a cleanup that keeps the resource.
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource", nests=True),
     Decision("wait", action="CREATE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::None", nests=True),
     Decision("wait", action="UPDATE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="x"),
     dict(new_properties={"value": "b"}, new_type="OS::Heat::TestResource"),
     Decision("wait", action="UPDATE")),
    ("c", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=True, nests=True), Decision("wait", action="UPDATE")),
    ("c", "SUSPEND", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=True, nests=True), Decision("wait", action="UPDATE")),
    ("c", "SUSPEND", {}, dict(in_template=True), Decision("suspend")),
    ("c", "SUSPEND", dict(action="SUSPEND"), dict(in_template=True), Decision("noop")),
    ("u", "RESUME", dict(action="SUSPEND"), {}, Decision("resume")),
    ("u", "RESUME", {}, {}, Decision("noop")),
    ("u", "CHECK", {}, {}, Decision("check")),
]


@pytest.mark.parametrize(("kind", "action", "row", "kwargs", "expected"), CASES)
def test_decide(kind: str, action: str, row: dict[str, Any], kwargs: dict[str, Any],
                expected: Decision) -> None:
    kwargs.setdefault("in_template", True)
    assert decide(kind, action, "t1", "tpl1", _row(**row), **kwargs) == expected


def test_what_a_preempted_action_reads_as() -> None:
    # Recorded from Heat 27.0.1: a stack delete aborts what runs; a newer update cancels a
    # nested stack's update, whose resource fails with the nested stack's reason.
    assert preempted_reason("DELETE", "UPDATE", "res") == "UPDATE aborted (user triggered cancel)"
    assert preempted_reason("DELETE", "CREATE", "slow") == "CREATE aborted (user triggered cancel)"
    assert preempted_reason("UPDATE", "UPDATE", "res") == "resources.res: Stack UPDATE cancelled"


@pytest.mark.parametrize(("kind", "action", "row", "expected"), [
    ("u", "UPDATE", dict(traversal_id="t1", status="IN_PROGRESS", action="UPDATE"), "UPDATE"),
    ("c", "DELETE", dict(traversal_id="t1", status="IN_PROGRESS", action="UPDATE"), "UPDATE"),
    ("c", "DELETE", {}, "DELETE"),
    ("c", "SUSPEND", {}, "SUSPEND"),
    ("u", "CREATE", dict(action="INIT"), "CREATE"),
    ("u", "ADOPT", dict(action="INIT"), "ADOPT"),
    ("u", "CHECK", {}, "CHECK"),
    ("u", "UPDATE", dict(status="FAILED"), "UPDATE"),
])
def test_the_action_a_node_gives_up_on(kind: str, action: str, row: dict[str, Any], expected: str) -> None:
    assert attempted_action(kind, action, "t1", _row(**row)) == expected
