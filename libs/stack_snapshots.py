"""Heat's stack snapshots: take one, and restore a stack to one.

A snapshot records the stack's desired state (its template, files and
environment) and each resource's recorded state and data, as Heat's
abandon data does. Taking one needs no cloud call for Ember's types, so it
happens at once (``SNAPSHOT_COMPLETE``, with Heat's events). Restoring is an
update to the snapshot's desired state (the ``RESTORE`` action), in which a
resource made again gets back the data it had: a random string its value.
"""

from __future__ import annotations

import uuid
from typing import Any

import asyncpg

from libs import plan_requests
from libs.db import events, resources, snapshots, stacks, templates
from libs.engine import status
from libs.engine.status import Action, Status
from libs.messaging.bus import Bus
from libs.messaging.payloads import PlanRequest
from libs.template import errors


class ActionInProgress(errors.TemplateError):
    error_type = "ActionInProgress"

    def __init__(self, stack: stacks.StackRow) -> None:
        super().__init__(f"Stack {stack.name} already has an action ({stack.action}) in progress.")


def _refuse_busy(stack: stacks.StackRow) -> None:
    if stack.status == Status.IN_PROGRESS:
        raise ActionInProgress(stack)


async def stack_data(conn: Any, stack: stacks.StackRow) -> dict[str, Any]:
    """Heat's abandon data: the desired state and every current resource's id and data.

    A resource that nests a stack is recorded, as Heat records it, by its
    nested stack's own abandon data (its ``resources`` and ``template``), so
    an adopt makes the nested stack again and adopts what is in it.
    """
    rows = [r for r in await resources.for_stack(conn, stack.id) if r.is_current]
    raw = await templates.get(conn, stack.template_id) if stack.template_id else None
    nested = {str(child_id) for child_id in await stacks.children(conn, stack.id)}
    recorded: dict[str, Any] = {}
    for r in rows:
        entry = {"name": r.name, "type": r.type, "action": r.action, "status": r.status,
                 "resource_id": r.physical_id, "resource_data": dict(r.data), "metadata": {}}
        if r.physical_id in nested:
            child = await stacks.get(conn, uuid.UUID(r.physical_id))
            if child is not None and child.deleted_at is None:
                entry = {**entry, **await stack_data(conn, child)}
        recorded[r.name] = entry
    return {
        "name": stack.name, "id": str(stack.id), "project_id": stack.project,
        "action": stack.action, "status": stack.status,
        "template": raw.template if raw else {}, "files": raw.files if raw else {},
        "environment": raw.environment if raw else {},
        "resources": recorded,
    }


def nested_data(entry: Any) -> dict[str, Any] | None:
    """The nested stack's abandon data inside a resource's entry, if the resource nests one."""
    if isinstance(entry, dict) and isinstance(entry.get("resources"), dict) and "template" in entry:
        return entry
    return None


async def take(pool: asyncpg.Pool, stack: stacks.StackRow, name: str | None) -> snapshots.SnapshotRow:
    _refuse_busy(stack)
    async with pool.acquire() as conn, conn.transaction():
        data = await stack_data(conn, stack)
        reason = status.stack_started(Action.SNAPSHOT)
        await _stack_event(conn, stack, Status.IN_PROGRESS, reason)
        row = await snapshots.insert(conn, stack_id=stack.id, name=name, template_id=stack.template_id,
                                     data=data, status=Status.COMPLETE)
        done = status.stack_completed(Action.SNAPSHOT)
        await stacks.set_state(conn, stack.id, action=Action.SNAPSHOT, status=Status.COMPLETE, reason=done)
        await _stack_event(conn, stack, Status.COMPLETE, done)
    return row


async def restore(pool: asyncpg.Pool, bus: Bus, stack: stacks.StackRow,
                  snapshot: snapshots.SnapshotRow) -> None:
    _refuse_busy(stack)
    if snapshot.status != Status.COMPLETE:
        raise errors.NotSupported(f"Restoring a stack from a snapshot in status {snapshot.status}")
    async with pool.acquire() as conn, conn.transaction():
        await stacks.set_desired(conn, stack.id, action=Action.RESTORE, template_id=snapshot.template_id,
                                 reason=status.stack_started(Action.RESTORE))
        plan = await plan_requests.stage(conn, bus.names, stack, Action.RESTORE, reason="restore",
                                         snapshot_id=str(snapshot.id))
    await plan_requests.send(pool, bus, plan)


def recorded_resources(data: dict[str, Any], names: list[str]
                       ) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """From snapshot or abandon data: each named resource's physical id and data, by name."""
    recorded = data.get("resources") or {}
    return {n: (recorded[n].get("resource_id"), dict(recorded[n].get("resource_data") or {}))
            for n in names if isinstance(recorded.get(n), dict)}


async def abandon(pool: asyncpg.Pool, bus: Bus, stack: stacks.StackRow) -> dict[str, Any]:
    """Heat's abandon: the stack's data, then a delete that leaves every physical resource alone."""
    _refuse_busy(stack)
    plans: list[PlanRequest] = []
    async with pool.acquire() as conn, conn.transaction():
        data = await stack_data(conn, stack)
        # Nested stacks are abandoned with their parent, as Heat's delete_nested does.
        gone = [stack] + [s for s in await stacks.nested_tree(conn, stack.id, 2**31 - 1)
                          if s.deleted_at is None]
        for each in gone:
            await resources.retain_all(conn, each.id)
            await stacks.set_desired(conn, each.id, action=Action.DELETE, template_id=each.template_id,
                                     reason=status.stack_started(Action.DELETE))
            plans.append(await plan_requests.stage(conn, bus.names, each, Action.DELETE, reason="abandon"))
    for plan in plans:
        await plan_requests.send(pool, bus, plan)
    return data


async def _stack_event(conn: Any, stack: stacks.StackRow, state: Status, reason: str) -> None:
    await events.add(conn, stack_id=stack.id, resource_name=stack.name, physical_resource_id=str(stack.id),
                     resource_type="OS::Heat::Stack", action=Action.SNAPSHOT, status=state, reason=reason)
