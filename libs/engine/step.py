"""What one node of a traversal does to its row: the decision, not the doing.

The worker loads the row and the desired definition, calls :func:`decide`,
and carries out the answer one plugin step at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal

from libs.engine.status import CONVERGING

Verb = Literal["create", "update", "replace", "noop", "continue", "delete", "forget", "retain",
               "suspend", "resume", "check", "done", "wait", "adopt"]


@dataclasses.dataclass(frozen=True)
class RowState:
    id: int
    name: str
    type: str
    action: str
    status: str
    is_current: bool
    traversal_id: str | None
    template_id: str | None
    properties: Mapping[str, Any] | None
    deletion_policy: str = "Delete"
    physical_id: str | None = None


@dataclasses.dataclass(frozen=True)
class Decision:
    verb: Verb
    # For "update": the properties whose values change (Heat's prop_diff).
    changed: tuple[str, ...] = ()
    # For "continue": the action whose steps are under way.
    action: str = ""
    # The action of an older traversal this one cancels to do its own (see :func:`takes_over`).
    preempts: str = ""


def changed_properties(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[str, ...]:
    old = old or {}
    return tuple(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))


def decide(kind: str, traversal_action: str, traversal_id: str, template_id: str | None,
           row: RowState, *, in_template: bool, new_type: str | None = None,
           new_properties: Mapping[str, Any] | None = None,
           needs_replace: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = None,
           never_updates: bool = False, nests: bool = False) -> Decision:
    """What the node does to ``row`` (``nests``: its type is a nested stack)."""
    if row.traversal_id == traversal_id:
        if row.status == "IN_PROGRESS":
            return Decision("continue", action=row.action)
        if row.status == "COMPLETE" and (kind == "c" or row.template_id == template_id
                                         or traversal_action in ("CHECK", "RESUME")):
            return Decision("done")  # a redelivered message for a finished node
    elif row.status == "IN_PROGRESS":
        taken = takes_over(kind, traversal_action, row, in_template=in_template, new_type=new_type,
                           new_properties=new_properties, nests=nests)
        if taken is not None:
            return taken
        # An older traversal's action is under way: it finishes that resource
        # (and only that), then this traversal takes over from its result.
        return Decision("wait", action=row.action)
    if kind == "c":
        return _cleanup(traversal_action, row, in_template)
    if traversal_action == "CHECK":
        return Decision("check")
    if traversal_action == "RESUME":
        return Decision("resume" if row.action == "SUSPEND" else "noop")
    if row.action == "INIT":
        return Decision("adopt" if traversal_action == "ADOPT" else "create")
    if never_updates and new_type == row.type:
        return Decision("noop")  # OS::Heat::None: not even a failed one is replaced
    if row.status == "FAILED" or (row.action == "DELETE"):
        # Heat replaces any failed resource on the next update (needs_replace_failed).
        return Decision("replace")
    assert new_properties is not None
    if new_type is not None and new_type != row.type:
        return Decision("replace")
    changed = changed_properties(row.properties, new_properties)
    if not changed:
        return Decision("noop")
    if needs_replace is not None and needs_replace(row.properties or {}, new_properties):
        return Decision("replace")
    return Decision("update", changed=changed)


def takes_over(kind: str, traversal_action: str, row: RowState, *, in_template: bool,
               new_type: str | None, new_properties: Mapping[str, Any] | None, nests: bool
               ) -> Decision | None:
    """What this traversal does instead of waiting for an older one's action on ``row``, if anything.

    Heat never makes a delete wait: a stack delete cancels every action under way
    (``<ACTION> aborted (user triggered cancel)``) and deletes. And a newer
    traversal that reaches a nested stack whose older create or update still
    runs cancels that nested action (Heat's preemption) and updates the nested
    stack in place (or deletes it, in a cleanup), rather than waiting for it.
    Anything else waits: the older action finishes that one resource.
    """
    if traversal_action == "DELETE" or (nests and row.action in ("CREATE", "UPDATE")):
        cancelled = dataclasses.replace(row, status="FAILED")
        if kind == "c":
            then = _cleanup(traversal_action, cancelled, in_template)
            if then.verb in ("delete", "retain"):
                return dataclasses.replace(then, preempts=row.action)
        elif (traversal_action in CONVERGING and in_template and row.physical_id
              and new_type == row.type and new_properties is not None):
            return Decision("update", changed=changed_properties(row.properties, new_properties),
                            preempts=row.action)
    return None


def preempted_reason(traversal_action: str, action: str, name: str) -> str:
    """Heat's reason for an action :func:`takes_over` cancelled (the ``<ACTION>_FAILED`` event)."""
    if traversal_action == "DELETE":
        return f"{action} aborted (user triggered cancel)"
    return f"resources.{name}: Stack {action} cancelled"  # the nested stack's reason, from its resource


def attempted_action(kind: str, traversal_action: str, traversal_id: str, row: RowState) -> str:
    """The action a node was about (the one it has under way, else the one it would start)."""
    if row.traversal_id == traversal_id and row.status == "IN_PROGRESS":
        return row.action
    if kind == "c":
        return "SUSPEND" if traversal_action == "SUSPEND" else "DELETE"
    if traversal_action in ("CHECK", "RESUME"):
        return traversal_action
    if row.action == "INIT":
        return "ADOPT" if traversal_action == "ADOPT" else "CREATE"
    return "UPDATE"


def _cleanup(traversal_action: str, row: RowState, in_template: bool) -> Decision:
    if traversal_action == "SUSPEND":
        return Decision("noop" if row.action == "SUSPEND" and row.status == "COMPLETE" else "suspend")
    if traversal_action != "DELETE" and row.is_current and in_template:
        return Decision("noop")
    if row.action == "INIT" or (row.action == "DELETE" and row.status == "COMPLETE"):
        return Decision("forget")  # nothing physical to delete
    if row.deletion_policy == "Retain":
        return Decision("retain")
    return Decision("delete")
