"""Letting paused nodes go: clear one hook, step, or continue; the api and NATS requests share this.

Each clear is a transaction (the hook row, Heat's ``Hook <hook> is cleared``
event) followed by a publish of the node, with a message id of its own so
JetStream does not drop it as the node's first message again. Should that
publish be lost, the workers' sweep re-queues the node.

The node goes on in the trace of the operation it paused, not the clearer's:
the clear's event and messages continue the paused step's trace, and link
to the request that cleared it.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Sequence

from opentelemetry import trace

from libs.db import Conn, events, hooks, resources, stacks, traversals
from libs.db.pool import Connections
from libs.engine import hooks as rules
from libs.engine.status import Status
from libs.messaging.bus import Bus
from libs.messaging.payloads import HookNotice, WorkItem


@dataclasses.dataclass(frozen=True)
class Released:
    """A node let go: where it is and the hook it was paused at."""

    stack_id: str
    stack_name: str
    resource_name: str
    hook: str
    node: str


async def clear(pool: Connections, bus: Bus, stack: stacks.StackRow, resource_name: str, hook: str, *,
                by: str) -> list[Released]:
    """Clear ``hook`` where the resource waits at it; empty when it does not."""
    async with pool.acquire() as conn, conn.transaction():
        waiting = await hooks.waiting(conn, [stack.id], resource_name=resource_name, hook=hook)
        released = await _clear_rows(conn, {stack.id: stack}, waiting, by)
    await _publish(bus, {stack.id: stack}, released, by)
    return [r for r, _ in released]


async def release_tree(pool: Connections, bus: Bus, stack: stacks.StackRow, *, by: str,
                       mode: rules.HookMode) -> list[Released]:
    """Step (``mode="step"``) or continue (``"run"``) the stack and the stacks nested in it.

    Every waiting hook is cleared. Stepping then pauses each node that starts
    next; continuing lets the current operation run to its end without pausing.
    """
    async with pool.acquire() as conn, conn.transaction():
        tree = {stack.id: stack} | {s.id: s for s in await stacks.nested_tree(conn, stack.id, 2**31 - 1)
                                     if s.deleted_at is None}
        running = [s.current_traversal for s in tree.values()
                   if s.status == Status.IN_PROGRESS and s.current_traversal is not None]
        await traversals.set_hook_mode(conn, running, mode)
        waiting = await hooks.waiting(conn, list(tree))
        released = await _clear_rows(conn, tree, waiting, by)
    await _publish(bus, tree, released, by)
    return [r for r, _ in released]


async def _clear_rows(conn: Conn, tree: dict[uuid.UUID, stacks.StackRow], waiting: Sequence[hooks.HookRow],
                      by: str) -> list[tuple[Released, hooks.HookRow]]:
    released = []
    for row in waiting:
        if not await hooks.clear(conn, row.traversal_id, row.node, row.hook, by):
            continue  # cleared by someone else just now
        current = (await resources.current_by_names(conn, row.stack_id, {row.resource_name})).get(
            row.resource_name)
        await events.add(conn, stack_id=row.stack_id, resource_name=row.resource_name,
                         physical_resource_id=current.physical_id if current else None,
                         resource_type=current.type if current else "",
                         action=current.action if current else row.action,
                         status=current.status if current else Status.COMPLETE,
                         reason=rules.cleared_reason(row.hook), traversal_id=row.traversal_id,
                         trace=row.trace.context())
        stack = tree[row.stack_id]
        released.append((Released(str(stack.id), stack.name, row.resource_name, row.hook, row.node), row))
    return released


async def _publish(bus: Bus, tree: dict[uuid.UUID, stacks.StackRow],
                   released: Sequence[tuple[Released, hooks.HookRow]], by: str) -> None:
    clearer = trace.get_current_span().get_span_context()
    for item, row in released:
        with bus.tracer.start_as_current_span(
                f"release {item.resource_name} at {row.hook}", context=row.trace.context(),
                links=[trace.Link(clearer)] if clearer.is_valid else None,
                attributes={"ember.stack_id": item.stack_id, "ember.traversal_id": str(row.traversal_id),
                            "ember.node": row.node, "ember.hook": row.hook, "ember.cleared_by": by}):
            work = WorkItem(stack_id=item.stack_id, traversal_id=str(row.traversal_id), node=row.node)
            await bus.publish(bus.names.work(item.stack_id), work,
                              msg_id=f"{work.msg_id}:cleared:{row.hook}:{time.time()}")
            stack = tree[row.stack_id]
            notice = HookNotice(project=stack.project, stack_id=item.stack_id, stack_name=stack.name,
                                resource_name=item.resource_name, hook=item.hook, state="cleared",
                                traversal_id=str(row.traversal_id), node=row.node, by=by)
            await bus.publish(bus.names.hooks(stack.project, item.stack_id, item.resource_name), notice,
                              msg_id=notice.msg_id)
