"""What one node of a traversal does to its row: the decision, not the doing.

The worker loads the row and the desired definition, calls :func:`decide`,
and carries out the answer one plugin step at a time.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Collection, Mapping
from typing import Any

from libs.engine.keys import NodeKind
from libs.engine.status import CONVERGING, Action, Status


class Verb(enum.StrEnum):
    """What a node does to its row."""

    CREATE = "create"
    UPDATE = "update"
    REPLACE = "replace"  # a new row is made (CREATE), the old one cleaned up later
    NOOP = "noop"
    CONTINUE = "continue"  # the action under way takes its next step
    DELETE = "delete"
    FORGET = "forget"  # nothing physical: the row goes
    RETAIN = "retain"  # DeletionPolicy Retain: the row goes, the thing stays
    SUSPEND = "suspend"
    RESUME = "resume"
    CHECK = "check"
    DONE = "done"  # a redelivered message of a finished node
    WAIT = "wait"  # an older traversal's action on the row is under way
    ADOPT = "adopt"
    EXTERNAL = "external"  # taken over by its external_id (an ADOPT)
    REFUSE = "refuse"

    @property
    def action(self) -> Action | None:
        """The resource action the verb starts, if it starts one."""
        return _STARTS.get(self)


_STARTS = {Verb.ADOPT: Action.ADOPT, Verb.EXTERNAL: Action.ADOPT, Verb.CREATE: Action.CREATE,
           Verb.UPDATE: Action.UPDATE, Verb.REPLACE: Action.CREATE, Verb.DELETE: Action.DELETE,
           Verb.SUSPEND: Action.SUSPEND, Verb.RESUME: Action.RESUME, Verb.CHECK: Action.CHECK}


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
    # The id of the resource taken over (``external_id``), which Ember did not make.
    external_id: str | None = None
    physical_id: str | None = None
    # Cloud calls its action's step may be making right now (marked attempted, not yet answered).
    calls_in_flight: bool = False
    # The status of its newest replacement never made current (a create that failed or is under
    # way), where the caller looked for one (see :func:`restores_replaced`).
    replacement: str | None = None


@dataclasses.dataclass(frozen=True)
class Refusal:
    """An update Heat refuses before touching the resource: it keeps its state, the stack fails."""

    error_type: str  # Heat's exception, named in the stack's reason
    message: str
    event: bool  # whether Heat records it as an UPDATE_FAILED event of the resource


@dataclasses.dataclass(frozen=True)
class Decision:
    verb: Verb
    # For "update": the properties whose values change (Heat's prop_diff).
    changed: tuple[str, ...] = ()
    # For "continue": the action whose steps are under way.
    action: str = ""
    # For "external": the id of the existing resource the node takes over.
    external_id: str | None = None
    # For "refuse": what Heat answers.
    refusal: Refusal | None = None
    # Whether the node reaches its pre-hook first; Heat settles an external resource and a
    # change of type before it.
    hooked: bool = True
    # The action of an older traversal this one cancels to do its own (see :func:`takes_over`).
    preempts: str = ""
    # For "update": the resource first takes back what its failed replacement took from it.
    restores: bool = False
    # For "replace": decided by the update itself (a property that cannot change in place), so
    # Heat's UPDATE_IN_PROGRESS and UPDATE_COMPLETE "requires replacement" precede it; a failed,
    # deleted, retyped or vanished resource is replaced without them.
    announced: bool = False


def changed_properties(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[str, ...]:
    old = old or {}
    return tuple(sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k)))


def decide(kind: NodeKind, traversal_action: Action, traversal_id: str, template_id: str | None,
           row: RowState, *, in_template: bool, new_type: str | None = None,
           new_properties: Mapping[str, Any] | None = None,
           needs_replace: Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None = None,
           never_updates: bool = False, always_updates: bool = False,
           same_implementation: bool | None = None, nested_check_failed: bool = False,
           external_id: str | None = None, restricted: Collection[str] = (),
           preemptible: bool = False, prepares_replace: bool = False) -> Decision:
    """What the node does to the row.

    ``same_implementation``: whether the new type resolves to the plugin the
    row's type resolved to (Heat compares the classes, not the names; without
    it, the names are compared). ``always_updates``: the type's resource is a
    nested stack (Heat's stack resources: templates, groups), which every update
    reaches so that its own resources decide; ``nested_check_failed``: that
    nested stack's CHECK failed. ``external_id`` is the template's for the
    resource (resolved); ``restricted`` the environment's ``restricted_actions``
    for it (``update``, ``replace``). ``preemptible``: the older traversal's action
    under way on the row is a nested stack's, which this traversal may cancel.
    ``prepares_replace``: the type's replacement takes from the resource it replaces (a
    server's ports), which a rollback gives back (:func:`restores_replaced`).
    """
    if row.traversal_id == traversal_id:
        if row.status == Status.IN_PROGRESS:
            return Decision(Verb.CONTINUE, action=row.action)
        if (kind == NodeKind.UPDATE and row.status == Status.COMPLETE and row.action == Action.ADOPT
                and row.external_id is not None and traversal_action != Action.ADOPT):
            # An external resource taken over is checked next, as Heat's create does.
            return Decision(Verb.CHECK)
        if row.status == Status.COMPLETE and (kind == NodeKind.CLEANUP or row.template_id == template_id
                                              or traversal_action in (Action.CHECK, Action.RESUME)):
            return Decision(Verb.DONE)  # a redelivered message for a finished node
    elif row.status == Status.IN_PROGRESS:
        taken = takes_over(kind, traversal_action, row, in_template=in_template, new_type=new_type,
                           new_properties=new_properties, nests=preemptible)
        if taken is not None:
            return taken
        # An older traversal's action is under way: it finishes that resource
        # (and only that), then this traversal takes over from its result.
        return Decision(Verb.WAIT, action=row.action)
    if kind == NodeKind.CLEANUP:
        return _cleanup(traversal_action, row, in_template)
    if traversal_action == Action.CHECK:
        return Decision(Verb.CHECK)
    if traversal_action == Action.RESUME:
        return Decision(Verb.RESUME if row.action == Action.SUSPEND else Verb.NOOP)
    if row.action == Action.INIT:
        if traversal_action == Action.ADOPT:
            return Decision(Verb.ADOPT)
        if external_id is not None:
            return Decision(Verb.EXTERNAL, external_id=external_id)  # not made: taken over
        return Decision(Verb.CREATE)
    same = same_implementation if same_implementation is not None else new_type in (None, row.type)
    if not same:
        # Heat decides a change of implementation before anything else of the update.
        return _restricted(Verb.REPLACE, restricted, hooked=False) or Decision(Verb.REPLACE, hooked=False)
    if external_id != row.external_id:
        return Decision(Verb.REFUSE, hooked=False, refusal=Refusal(
            "NotSupported", f"Update to property external_id of {row.name} ({row.type}) is not supported.",
            event=False))
    if external_id is not None:
        return Decision(Verb.NOOP, hooked=False)  # an external resource is never updated
    if never_updates:
        return Decision(Verb.NOOP)  # OS::Heat::None: not even a failed one is replaced
    # Heat replaces any failed resource on the next update (needs_replace_failed), but a
    # nested stack that exists is updated, and its failed resources are replaced inside it;
    # one marked unhealthy (CHECK_FAILED while its nested stack is not) is replaced whole.
    updated_inside = always_updates and row.physical_id is not None and (
        row.action != Action.CHECK or nested_check_failed)
    if (row.status == Status.FAILED and not updated_inside) or row.action == Action.DELETE:
        return _restricted(Verb.REPLACE, restricted) or Decision(Verb.REPLACE)
    assert new_properties is not None
    changed = changed_properties(row.properties, new_properties)
    if changed and needs_replace is not None and needs_replace(row.properties or {}, new_properties):
        return _restricted(Verb.REPLACE, restricted) or Decision(Verb.REPLACE, announced=True)
    if kind == NodeKind.UPDATE and row.replacement is not None and restores_replaced(
            traversal_action, prepares_replace):
        if row.replacement == Status.IN_PROGRESS:
            # Its create goes on in the traversal rolled back; what it takes is known once it ends.
            return Decision(Verb.WAIT, action=Action.CREATE)
        # Heat runs restore_prev_rsrc before the update, which may change nothing (no restriction).
        return _restricted(Verb.UPDATE, restricted if changed else ()) or Decision(
            Verb.UPDATE, changed=changed, restores=True)
    if changed or always_updates or (new_type is not None and new_type != row.type):
        # Another name of the same implementation is a changed definition: an update in place.
        return _restricted(Verb.UPDATE, restricted) or Decision(Verb.UPDATE, changed=changed)
    return Decision(Verb.NOOP)


def restores_replaced(traversal_action: Action, prepares_replace: bool) -> bool:
    """Whether an update node looks for a failed replacement of its row (``RowState.replacement``).

    Heat's ``restore_prev_rsrc``: in a rollback, a resource whose type's replacement takes
    from the resource it replaces (``prepares_replace``) is the stack's again once that
    replacement failed, and takes back what it took before its update.
    """
    return prepares_replace and traversal_action == Action.ROLLBACK


def _restricted(verb: Verb, restricted: Collection[str], *, hooked: bool = True) -> Decision | None:
    """Heat's ``restricted_actions``: the update or replacement is refused, with an event saying so."""
    if verb not in restricted:
        return None
    return Decision(Verb.REFUSE, hooked=hooked, refusal=Refusal(
        "ResourceActionRestricted", f"{verb} is restricted for resource.", event=True))


def takes_over(kind: NodeKind, traversal_action: Action, row: RowState, *, in_template: bool,
               new_type: str | None, new_properties: Mapping[str, Any] | None, nests: bool
               ) -> Decision | None:
    """What this traversal does instead of waiting for an older one's action on ``row``, if anything.

    Heat never makes a delete wait: a stack delete cancels every action under way
    (``<ACTION> aborted (user triggered cancel)``) and deletes. And a newer
    traversal that reaches a nested stack whose older create or update still
    runs cancels that nested action (Heat's preemption) and updates the nested
    stack in place (or deletes it, in a cleanup), rather than waiting for it.
    Anything else waits: the older action finishes that one resource. So does a delete
    while the older action's cloud calls may still be in flight: what they make is known
    only from their answers, and a delete that looked before it was made would leave it.
    """
    if row.calls_in_flight:
        return None
    if traversal_action == Action.DELETE or (nests and row.action in (Action.CREATE, Action.UPDATE)):
        cancelled = dataclasses.replace(row, status=Status.FAILED)
        if kind == NodeKind.CLEANUP:
            then = _cleanup(traversal_action, cancelled, in_template)
            if then.verb in (Verb.DELETE, Verb.RETAIN):
                return dataclasses.replace(then, preempts=row.action)
        elif (traversal_action in CONVERGING and in_template and row.physical_id
              and new_type == row.type and new_properties is not None):
            return Decision(Verb.UPDATE, changed=changed_properties(row.properties, new_properties),
                            preempts=row.action)
    return None


def preempted_reason(traversal_action: Action, action: str, name: str) -> str:
    """Heat's reason for an action :func:`takes_over` cancelled (the ``<ACTION>_FAILED`` event)."""
    if traversal_action == Action.DELETE:
        return f"{action} aborted (user triggered cancel)"
    return f"resources.{name}: Stack {action} cancelled"  # the nested stack's reason, from its resource


def attempted_action(kind: NodeKind, traversal_action: Action, traversal_id: str, row: RowState) -> str:
    """The action a node was about (the one it has under way, else the one it would start)."""
    if row.traversal_id == traversal_id and row.status == Status.IN_PROGRESS:
        return row.action
    if kind == NodeKind.CLEANUP:
        return Action.SUSPEND if traversal_action == Action.SUSPEND else Action.DELETE
    if traversal_action in (Action.CHECK, Action.RESUME):
        return traversal_action
    if row.action == Action.INIT:
        return Action.ADOPT if traversal_action == Action.ADOPT else Action.CREATE
    return Action.UPDATE


def _cleanup(traversal_action: Action, row: RowState, in_template: bool) -> Decision:
    if traversal_action == Action.SUSPEND:
        suspended = row.action == Action.SUSPEND and row.status == Status.COMPLETE
        return Decision(Verb.NOOP if suspended else Verb.SUSPEND)
    if traversal_action != Action.DELETE and row.is_current and in_template:
        return Decision(Verb.NOOP)
    if row.action == Action.INIT or (row.action == Action.DELETE and row.status == Status.COMPLETE):
        return Decision(Verb.FORGET)  # nothing physical to delete
    if row.deletion_policy == "Retain":
        return Decision(Verb.RETAIN)
    return Decision(Verb.DELETE)
