"""What one node of a traversal does to its row: the decision, not the doing.

The worker loads the row and the desired definition, calls :func:`decide`,
and carries out the answer one plugin step at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Literal

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


def changed_properties(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[str, ...]:
    old = old or {}
    return tuple(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))


def decide(kind: str, traversal_action: str, traversal_id: str, template_id: str | None,
           row: RowState, *, in_template: bool, new_type: str | None = None,
           new_properties: Mapping[str, Any] | None = None,
           needs_replace: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = None,
           never_updates: bool = False, same_implementation: bool | None = None,
           nests: bool = False, nested_check_failed: bool = False) -> Decision:
    """What the node does to the row.

    ``same_implementation``: whether the new type resolves to the plugin the
    row's type resolved to (Heat compares the classes, not the names; without
    it, the names are compared). ``nests``: the new type's resource is a nested
    stack, which every update reaches so that its own resources decide;
    ``nested_check_failed``: that nested stack's CHECK failed.
    """
    if row.traversal_id == traversal_id:
        if row.status == "IN_PROGRESS":
            return Decision("continue", action=row.action)
        if row.status == "COMPLETE" and (kind == "c" or row.template_id == template_id
                                         or traversal_action in ("CHECK", "RESUME")):
            return Decision("done")  # a redelivered message for a finished node
    elif row.status == "IN_PROGRESS":
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
    same = same_implementation if same_implementation is not None else new_type in (None, row.type)
    if never_updates and same:
        return Decision("noop")  # OS::Heat::None: not even a failed one is replaced
    # Heat replaces any failed resource on the next update (needs_replace_failed), but a
    # nested stack that exists is updated, and its failed resources are replaced inside it;
    # one marked unhealthy (CHECK_FAILED while its nested stack is not) is replaced whole.
    updated_inside = nests and row.physical_id is not None and (row.action != "CHECK" or nested_check_failed)
    failed = row.status == "FAILED" and not updated_inside
    if failed or row.action == "DELETE":
        return Decision("replace")
    assert new_properties is not None
    if not same:
        return Decision("replace")
    changed = changed_properties(row.properties, new_properties)
    if changed and needs_replace is not None and needs_replace(row.properties or {}, new_properties):
        return Decision("replace")
    if changed or nests or (new_type is not None and new_type != row.type):
        # Another name of the same implementation is a changed definition: an update in place.
        return Decision("update", changed=changed)
    return Decision("noop")


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
