"""What a step does to its row, as data: the one answer to "what do I write?" for every path.

Pure: given the row, the action and what the plugin's step answered (or what
the node decided without a plugin step), an :class:`Outcome` says the row's
compare-and-set write, the action's event, whether the row goes, whether the
node finishes (releasing its successors), when to look again, the stack's
failure, and the cloud calls to make once nothing is held.
:mod:`services.worker.writer` carries outcomes out, many in one round.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from libs.cloud.calls import CloudCall
from libs.db.resources import ResourceRow
from libs.engine import create_retry, status
from libs.engine.status import Action, Status
from libs.resources.base import ResourceType
from libs.resources.stack_user import StackUserGrant
from libs.resources.steps import Call, Done, Failed, KeepType, Wait
from services.worker import pending, rows

# The actions whose completion records the properties they applied.
APPLYING = frozenset({Action.CREATE, Action.UPDATE, Action.ADOPT})


@dataclasses.dataclass(frozen=True)
class Outcome:
    # The row's compare-and-set write; empty: nothing to write.
    changes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # The event of the action: (status, reason).
    event: tuple[Status, str] | None = None
    # Events written before it, each of its own action: (action, status, reason).
    preceding: tuple[tuple[str, Status, str], ...] = ()
    # The row is deleted (after its event).
    removed: bool = False
    # The node is finished: its successors are released.
    finished: bool = False
    # Look again after this many seconds (a Wait, a Call with a delay).
    retry: float | None = None
    # The resource failed: the stack's reason.
    failure: str | None = None
    # Cloud calls to make once the write is committed and no lock is held.
    calls: tuple[CloudCall, ...] = ()
    # What the log and the retry say the step is about.
    about: str = ""
    # The resource's stack user to store with the row's write (its secret is in the data written).
    stack_user: StackUserGrant | None = None


@dataclasses.dataclass(frozen=True)
class Calls:
    """A step that asked for calls to make now: made once nothing is held, then its next step runs."""

    calls: tuple[CloudCall, ...]
    # The row as written, its calls marked attempted (None: an observe call, which changes nothing).
    row: ResourceRow | None
    # The project the calls are made in.
    project: str


def started(row: ResourceRow, action: str, traversal_id: uuid.UUID, template_id: uuid.UUID | None,
            now: datetime.datetime, **more: Any) -> Outcome:
    """The first step of ``action``: the row is under way (with its event), before any plugin runs."""
    return Outcome({"action": action, "status": Status.IN_PROGRESS, "status_reason": status.STATE_CHANGED,
                    "traversal_id": traversal_id, "action_started": now,
                    "template_id": row.template_id or template_id, **more},
                   event=(Status.IN_PROGRESS, status.STATE_CHANGED))


def failed(action: str, reason: str, traversal_id: uuid.UUID) -> Outcome:
    return Outcome({"action": action, "status": Status.FAILED, "traversal_id": traversal_id,
                    "status_reason": reason}, event=(Status.FAILED, reason),
                   failure=status.resource_failed(action, reason))


def settled(changes: Mapping[str, Any] | None = None, *, removed: bool = False) -> Outcome:
    """A node that ends without a plugin step (nothing to do, a row forgotten or retained)."""
    return Outcome(dict(changes or {}), removed=removed, finished=True)


def of_step(row: ResourceRow, action: str, result: Done | Wait | Failed | Call, plugin: ResourceType, *,
            props: Mapping[str, Any], traversal_id: uuid.UUID, template_id: uuid.UUID | None,
            deletion_policy: str, reads: frozenset[tuple[Any, ...]] = frozenset(),
            kept: bool = False, can_call: bool = True, retry_limit: int = 0) -> Outcome:
    """What the plugin's answer to a step of ``action`` on ``row`` does.

    ``kept``: a completed DELETE keeps its row (as DELETE_COMPLETE, while it may
    wait at its post-hook). ``can_call``: the worker has a cloud to call.
    ``retry_limit``: Heat's ``action_retry_limit`` (:mod:`libs.engine.create_retry`).
    """
    # An answered step's calls are done with; a restart's start has run.
    data = {k: v for k, v in pending.without(row.data).items() if k != create_retry.RESTART}
    if isinstance(result, Failed):
        reason = result.status_reason("resources", row.name)
        again = create_retry.after_failure(action, result.error, row.data, retry_limit, str(traversal_id),
                                           remake=result.remake)
        if again is not None:
            return _retried(row, action, data, again, reason)
        before = create_retry.retrying(row.data, str(traversal_id))
        if before is not None and create_retry.retried(action, result.error, result.remake):
            # Heat's reason is the last failure's alone; Ember says what was tried before it.
            reason = f"{reason} (made {before.failed + 1} times: EMBER_ACTION_RETRY_LIMIT is {retry_limit})"
        out = failed(action, reason, traversal_id)
        if create_retry.KEY not in row.data:
            return out
        # Failed for good: the retry's record goes (a later delete is a plain delete).
        return dataclasses.replace(out, changes={**out.changes, "data": {
            k: v for k, v in data.items() if k != create_retry.KEY}})
    retry = create_retry.retrying(row.data, str(traversal_id))
    if retry is not None and action == Action.DELETE and isinstance(result, Done):
        return _created_again(row, plugin, data, retry)
    if isinstance(result, Wait):
        return Outcome(_recorded(row, result.data, result.physical_id, data), retry=result.delay,
                       about=f"{action} of {row.name} in progress")
    if isinstance(result, Call):
        if not can_call:
            names = ", ".join(c.describe() for c in result.calls)
            return failed(action, f"ResourceFailure: resources.{row.name}: no cloud is configured for "
                                  f"this worker to call ({names})", traversal_id)
        now = result.delay <= 0
        changes = _recorded(row, result.data, result.physical_id, data, force=True)
        changes["data"] = pending.recorded(changes["data"], result.calls, attempted=now)
        return Outcome(changes, retry=None if now else result.delay, calls=result.calls if now else (),
                       about=f"{action} of {row.name} waits on the cloud", stack_user=result.stack_user)
    reason = result.reason or status.STATE_CHANGED
    if action == Action.DELETE and not kept:
        return Outcome(event=(Status.COMPLETE, status.STATE_CHANGED), removed=True, finished=True)
    if action == Action.DELETE:
        return Outcome({"action": action, "status": Status.COMPLETE, "status_reason": status.STATE_CHANGED},
                       event=(Status.COMPLETE, status.STATE_CHANGED), finished=True)
    data = rows.merged(data, result.data)
    data.pop(create_retry.KEY, None)  # made at last
    physical_id = row.physical_id if isinstance(result.physical_id, KeepType) else result.physical_id
    return Outcome({
        "action": action, "status": Status.COMPLETE, "status_reason": reason, "physical_id": physical_id,
        "data": plugin.kept_data(data), "properties": props if action in APPLYING else row.properties,
        "reference": plugin.reference_id(physical_id, data, resource_name=row.name),
        "attributes": plugin.stored_attributes(reads, physical_id, data, props, resource_name=row.name),
        "template_id": template_id or row.template_id, "deletion_policy": deletion_policy,
    }, event=(Status.COMPLETE, reason), finished=True)


def _retried(row: ResourceRow, action: str, data: Mapping[str, Any], again: create_retry.Retry,
             reason: str) -> Outcome:
    """A create (or update) the cloud put in error, tried again: first the resource is deleted
    (Heat's events)."""
    marked = {**data, create_retry.KEY: again.record(), create_retry.RESTART: Action.DELETE}
    return Outcome({"action": Action.DELETE, "status": Status.IN_PROGRESS,
                    "status_reason": status.STATE_CHANGED, "data": marked},
                   preceding=((action, Status.FAILED, reason),
                              (Action.DELETE, Status.IN_PROGRESS, status.STATE_CHANGED)),
                   retry=0.0, about=f"{row.name} is deleted to be made again ({again.failed} failed)")


def _created_again(row: ResourceRow, plugin: ResourceType, data: Mapping[str, Any],
                   retry: create_retry.Retry) -> Outcome:
    """The failed resource deleted: its create starts again after Heat's backoff, afresh but for
    what the type keeps across a retry (a replacement's record of the ports it took)."""
    kept = {k: data[k] for k in plugin.kept_on_retry if k in data}
    fresh = {**kept, create_retry.KEY: retry.record(), create_retry.RESTART: Action.CREATE}
    return Outcome({"action": Action.CREATE, "status": Status.IN_PROGRESS,
                    "status_reason": status.STATE_CHANGED, "physical_id": None, "data": fresh},
                   preceding=((Action.DELETE, Status.COMPLETE, status.STATE_CHANGED),
                              (Action.CREATE, Status.IN_PROGRESS, status.STATE_CHANGED)),
                   retry=retry.delay, about=f"{row.name} is made again in {retry.delay:g}s")


def _recorded(row: ResourceRow, changes: Mapping[str, str | None], physical_id: str | KeepType | None,
              data: dict[str, Any], *, force: bool = False) -> dict[str, Any]:
    """What a step that goes on records now: its data changes and physical id (Heat's resource_id)."""
    out: dict[str, Any] = {}
    merged = rows.merged(data, changes)
    if changes or force or merged != row.data:
        out["data"] = merged
    if not isinstance(physical_id, KeepType):
        out["physical_id"] = physical_id
    return out
