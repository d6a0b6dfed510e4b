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
from libs.engine import status
from libs.engine.status import Action, Status
from libs.resources.base import ResourceType
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
            kept: bool = False, can_call: bool = True) -> Outcome:
    """What the plugin's answer to a step of ``action`` on ``row`` does.

    ``kept``: a completed DELETE keeps its row (as DELETE_COMPLETE, while it may
    wait at its post-hook). ``can_call``: the worker has a cloud to call.
    """
    data = pending.without(row.data)  # an answered step's calls are done with
    if isinstance(result, Failed):
        return failed(action, result.status_reason("resources", row.name), traversal_id)
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
                       about=f"{action} of {row.name} waits on the cloud")
    reason = result.reason or status.STATE_CHANGED
    if action == Action.DELETE and not kept:
        return Outcome(event=(Status.COMPLETE, status.STATE_CHANGED), removed=True, finished=True)
    if action == Action.DELETE:
        return Outcome({"action": action, "status": Status.COMPLETE, "status_reason": status.STATE_CHANGED},
                       event=(Status.COMPLETE, status.STATE_CHANGED), finished=True)
    data = rows.merged(data, result.data)
    physical_id = row.physical_id if isinstance(result.physical_id, KeepType) else result.physical_id
    return Outcome({
        "action": action, "status": Status.COMPLETE, "status_reason": reason, "physical_id": physical_id,
        "data": data, "properties": props if action in APPLYING else row.properties,
        "reference": plugin.reference_id(physical_id, data, resource_name=row.name),
        "attributes": plugin.stored_attributes(reads, physical_id, data, props, resource_name=row.name),
        "template_id": template_id or row.template_id, "deletion_policy": deletion_policy,
    }, event=(Status.COMPLETE, reason), finished=True)


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
