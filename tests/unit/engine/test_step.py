"""The step decision table: create, update in place, replace, keep, delete, retain."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.keys import NodeKind
from libs.engine.status import Action
from libs.engine.step import Decision, Refusal, RowState, Verb, attempted_action, decide, preempted_reason


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
     Decision(Verb.CREATE)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}), Decision(Verb.NOOP)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b"}), Decision(Verb.UPDATE, changed=("value",))),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b", "update_replace": True},
                            needs_replace=_replace_if_value), Decision(Verb.REPLACE, announced=True)),
    # A failed resource is replaced before any update starts (no "requires replacement" events).
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "a"}), Decision(Verb.REPLACE)),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "b", "update_replace": True},
                                                 needs_replace=_replace_if_value), Decision(Verb.REPLACE)),
    # A change of type replaces before the update that would reach the pre-update hook.
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="OS::Heat::None"),
     Decision(Verb.REPLACE, hooked=False)),
    ("u", "UPDATE", dict(traversal_id="t1", status="IN_PROGRESS", action="UPDATE"),
     dict(new_properties={}), Decision(Verb.CONTINUE, action="UPDATE")),
    ("u", "UPDATE", dict(traversal_id="t1", template_id="tpl1"), dict(new_properties={}),
     Decision(Verb.DONE)),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"x": 1}, never_updates=True,
                                                new_type="OS::Heat::TestResource"), Decision(Verb.NOOP)),
    ("c", "UPDATE", {}, dict(in_template=True), Decision(Verb.NOOP)),
    ("c", "UPDATE", {}, dict(in_template=False), Decision(Verb.DELETE)),
    ("c", "UPDATE", dict(is_current=False), dict(in_template=True), Decision(Verb.DELETE)),
    ("c", "DELETE", {}, dict(in_template=False), Decision(Verb.DELETE)),
    ("c", "DELETE", dict(deletion_policy="Retain"), dict(in_template=False), Decision(Verb.RETAIN)),
    ("c", "DELETE", dict(action="INIT"), dict(in_template=False), Decision(Verb.FORGET)),
    ("c", "DELETE", dict(traversal_id="t1", action="DELETE", status="IN_PROGRESS"),
     dict(in_template=False), Decision(Verb.CONTINUE, action="DELETE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(new_properties={"value": "b"}), Decision(Verb.WAIT, action="CREATE")),
    # A delete cancels any older action under way (Heat's stack delete stops every worker).
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(in_template=False), Decision(Verb.DELETE, preempts="CREATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", deletion_policy="Retain"),
     dict(in_template=False), Decision(Verb.RETAIN, preempts="UPDATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="DELETE"),
     dict(in_template=False), Decision(Verb.DELETE, preempts="DELETE")),
    # ...but not while the older step's cloud calls may be in flight: what they make is known
    # from their answers only, so the delete waits for them.
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE", calls_in_flight=True),
     dict(in_template=False), Decision(Verb.WAIT, action="CREATE")),
    ("c", "DELETE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", calls_in_flight=True,
                         deletion_policy="Retain"),
     dict(in_template=False), Decision(Verb.WAIT, action="UPDATE")),
    # A newer update preempts a nested stack's older create or update, and updates it in place...
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(new_properties={"value": "b"}, new_type="OS::Heat::TestResource", preemptible=True),
     Decision(Verb.UPDATE, changed=("value",), preempts="UPDATE")),
    ("u", "ROLLBACK", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE", physical_id="child"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource", preemptible=True),
     Decision(Verb.UPDATE, preempts="CREATE")),
    # ...or deletes it, when it is cleaned up...
    ("c", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=False, preemptible=True), Decision(Verb.DELETE, preempts="UPDATE")),
    # ...but waits for a create that has no nested stack yet, a type that changes, any other type's
    # action (it finishes that resource), and in a cleanup that keeps the resource.
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="CREATE"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource", preemptible=True),
     Decision(Verb.WAIT, action="CREATE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(new_properties={"value": "a"}, new_type="OS::Heat::None", preemptible=True),
     Decision(Verb.WAIT, action="UPDATE")),
    ("u", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="x"),
     dict(new_properties={"value": "b"}, new_type="OS::Heat::TestResource"),
     Decision(Verb.WAIT, action="UPDATE")),
    ("c", "UPDATE", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=True, preemptible=True), Decision(Verb.WAIT, action="UPDATE")),
    ("c", "SUSPEND", dict(traversal_id="t0", status="IN_PROGRESS", action="UPDATE", physical_id="child"),
     dict(in_template=True, preemptible=True), Decision(Verb.WAIT, action="UPDATE")),
    ("c", "SUSPEND", {}, dict(in_template=True), Decision(Verb.SUSPEND)),
    ("c", "SUSPEND", dict(action="SUSPEND"), dict(in_template=True), Decision(Verb.NOOP)),
    ("u", "RESUME", dict(action="SUSPEND"), {}, Decision(Verb.RESUME)),
    ("u", "RESUME", {}, {}, Decision(Verb.NOOP)),
    ("u", "CHECK", {}, {}, Decision(Verb.CHECK)),
    # Replace or update follows what the names resolve to (Heat compares the classes).
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="My::Test", same_implementation=True),
     Decision(Verb.UPDATE)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, new_type="OS::Heat::TestResource",
                             same_implementation=False), Decision(Verb.REPLACE, hooked=False)),
    ("u", "UPDATE", dict(type="My::Nothing"), dict(new_properties={}, new_type="OS::Heat::None",
                                                   same_implementation=True, never_updates=True),
     Decision(Verb.NOOP)),
    # Every update reaches a nested stack; a failed one that exists is updated in place.
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, always_updates=True), Decision(Verb.UPDATE)),
    ("u", "UPDATE", dict(status="FAILED", physical_id="child"),
     dict(new_properties={"value": "a"}, always_updates=True), Decision(Verb.UPDATE)),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "a"}, always_updates=True),
     Decision(Verb.REPLACE)),
    ("u", "UPDATE", dict(status="FAILED", action="CHECK", physical_id="child"),
     dict(new_properties={"value": "a"}, always_updates=True), Decision(Verb.REPLACE)),
    ("u", "UPDATE", dict(status="FAILED", action="CHECK", physical_id="child"),
     dict(new_properties={"value": "a"}, always_updates=True, nested_check_failed=True),
     Decision(Verb.UPDATE)),
]

# Heat's restore_prev_rsrc: a rollback's update of a resource whose replacement failed, for a type
# whose replacement takes from it (a server's ports), gives back what was taken, changed or not...
RESTORES: list[tuple[str, str, dict[str, Any], dict[str, Any], Decision]] = [
    ("u", "ROLLBACK", dict(replacement="FAILED"), dict(new_properties={"value": "a"}, prepares_replace=True),
     Decision(Verb.UPDATE, restores=True)),
    ("u", "ROLLBACK", dict(replacement="FAILED"), dict(new_properties={"value": "b"}, prepares_replace=True),
     Decision(Verb.UPDATE, changed=("value",), restores=True)),
    # ...restricted only when it changes something, as Heat restores before it updates...
    ("u", "ROLLBACK", dict(replacement="FAILED"),
     dict(new_properties={"value": "a"}, prepares_replace=True, restricted={"update"}),
     Decision(Verb.UPDATE, restores=True)),
    ("u", "ROLLBACK", dict(replacement="FAILED"),
     dict(new_properties={"value": "b"}, prepares_replace=True, restricted={"update"}),
     Decision(Verb.REFUSE, refusal=Refusal("ResourceActionRestricted", "update is restricted for resource.",
                                           event=True))),
    # ...once the replacement's create, going on in the traversal rolled back, has ended...
    ("u", "ROLLBACK", dict(replacement="IN_PROGRESS"),
     dict(new_properties={"value": "a"}, prepares_replace=True), Decision(Verb.WAIT, action="CREATE")),
    # ...and only in a rollback, for such a type, with such a replacement.
    ("u", "UPDATE", dict(replacement="FAILED"), dict(new_properties={"value": "a"}, prepares_replace=True),
     Decision(Verb.NOOP)),
    ("u", "ROLLBACK", dict(replacement="FAILED"), dict(new_properties={"value": "a"}), Decision(Verb.NOOP)),
    ("u", "ROLLBACK", {}, dict(new_properties={"value": "a"}, prepares_replace=True), Decision(Verb.NOOP)),
    ("c", "ROLLBACK", dict(replacement="FAILED"), dict(prepares_replace=True), Decision(Verb.NOOP)),
    # A failed resource is replaced: the new one takes what it needs from the failed one.
    ("u", "ROLLBACK", dict(replacement="FAILED", status="FAILED"),
     dict(new_properties={"value": "a"}, prepares_replace=True), Decision(Verb.REPLACE)),
]

_RESTRICTED_UPDATE = Refusal("ResourceActionRestricted", "update is restricted for resource.", event=True)
_RESTRICTED_REPLACE = Refusal("ResourceActionRestricted", "replace is restricted for resource.", event=True)
_EXTERNAL_CHANGED = Refusal(
    "NotSupported", "Update to property external_id of r (OS::Heat::TestResource) is not supported.",
    event=False)

# Heat 27.0.1's answers (tests/heat_parity/cases/small/restricted_*, external_id*).
REFUSALS: list[tuple[str, str, dict[str, Any], dict[str, Any], Decision]] = [
    # restricted_actions: refused after the pre-update hook, except a change of type (before it)
    ("u", "UPDATE", {}, dict(new_properties={"value": "b"}, restricted={"update"}),
     Decision(Verb.REFUSE, refusal=_RESTRICTED_UPDATE)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b"}, restricted={"replace"}),
     Decision(Verb.UPDATE, changed=("value",))),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, restricted={"update", "replace"}),
     Decision(Verb.NOOP)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "b", "update_replace": True},
                            needs_replace=_replace_if_value, restricted={"replace"}),
     Decision(Verb.REFUSE, refusal=_RESTRICTED_REPLACE)),
    ("u", "UPDATE", dict(status="FAILED"), dict(new_properties={"value": "a"}, restricted={"replace"}),
     Decision(Verb.REFUSE, refusal=_RESTRICTED_REPLACE)),
    ("u", "UPDATE", {}, dict(new_properties={}, new_type="OS::Heat::None", restricted={"replace"}),
     Decision(Verb.REFUSE, refusal=_RESTRICTED_REPLACE, hooked=False)),
    # external_id: taken over, never updated, and not to be added, removed or changed
    ("u", "CREATE", dict(action="INIT", properties=None, traversal_id=None),
     dict(new_properties={}, external_id="x"), Decision(Verb.EXTERNAL, external_id="x")),
    ("u", "ADOPT", dict(action="INIT", properties=None, traversal_id=None),
     dict(new_properties={}, external_id="x"), Decision(Verb.ADOPT)),
    ("u", "CREATE", dict(action="ADOPT", traversal_id="t1", template_id="tpl1", external_id="x"),
     dict(new_properties={}, external_id="x"), Decision(Verb.CHECK)),
    ("u", "CREATE", dict(action="CHECK", traversal_id="t1", template_id="tpl1", external_id="x"),
     dict(new_properties={}, external_id="x"), Decision(Verb.DONE)),
    ("u", "UPDATE", dict(external_id="x"), dict(new_properties={"value": "b"}, external_id="x"),
     Decision(Verb.NOOP, hooked=False)),
    ("u", "UPDATE", {}, dict(new_properties={"value": "a"}, external_id="x"),
     Decision(Verb.REFUSE, refusal=_EXTERNAL_CHANGED, hooked=False)),
    ("u", "UPDATE", dict(external_id="x"), dict(new_properties={"value": "a"}),
     Decision(Verb.REFUSE, refusal=_EXTERNAL_CHANGED, hooked=False)),
    ("u", "UPDATE", dict(external_id="x"), dict(new_properties={"value": "a"}, external_id="y"),
     Decision(Verb.REFUSE, refusal=_EXTERNAL_CHANGED, hooked=False)),
]


@pytest.mark.parametrize(("kind", "action", "row", "kwargs", "expected"), CASES + REFUSALS + RESTORES)
def test_decide(kind: str, action: str, row: dict[str, Any], kwargs: dict[str, Any],
                expected: Decision) -> None:
    kwargs.setdefault("in_template", True)
    assert decide(NodeKind(kind), Action(action), "t1", "tpl1", _row(**row), **kwargs) == expected


def test_what_a_preempted_action_reads_as() -> None:
    # Recorded from Heat 27.0.1: a stack delete aborts what runs; a newer update cancels a
    # nested stack's update, whose resource fails with the nested stack's reason.
    assert preempted_reason(Action.DELETE, "UPDATE", "res") == "UPDATE aborted (user triggered cancel)"
    assert preempted_reason(Action.DELETE, "CREATE", "slow") == "CREATE aborted (user triggered cancel)"
    assert preempted_reason(Action.UPDATE, "UPDATE", "res") == "resources.res: Stack UPDATE cancelled"


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
    assert attempted_action(NodeKind(kind), Action(action), "t1", _row(**row)) == expected
