"""The end of a traversal on its stack: settled complete with outputs, or failed.

Both the one-node path and the batched path finish traversals through here, so
the stack's status, its outputs, its event and a rollback request are written
the same way whoever finished the last node or met the first failure.
"""

from __future__ import annotations

import uuid
from typing import Any

from libs import plan_requests, resource_refresh
from libs.db import Conn, events, stacks, traversals
from libs.db.pool import Held
from libs.engine import desired, status
from libs.engine.status import Action, Status
from libs.messaging.bus import Bus
from libs.resources.registry import Registry
from services.worker.evaluation import OutputsOf, inline_outputs


async def stack_event(conn: Conn, stack: stacks.StackRow, traversal_id: uuid.UUID, *, action: str,
                      state: Status, reason: str) -> None:
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack",
                     action=action, status=state, reason=reason, traversal_id=traversal_id)


async def outputs_of(conn: Conn, stack_id: uuid.UUID, want: desired.Desired,
                     resolve: OutputsOf = inline_outputs) -> list[dict[str, Any]]:
    """The template's outputs over the stack's current rows (``output_error`` where one fails)."""
    return await resolve(want, await resource_refresh.current(
        conn, stack_id, desired.output_resources(want.definition)))


async def complete(conn: Conn, stack: stacks.StackRow, trav: traversals.TraversalRow,
                   want: desired.Desired | None, registry: Registry | None = None, *,
                   resolve: OutputsOf = inline_outputs) -> None:
    """The last node is done: settle the stack, if this traversal is still its current one."""
    action = trav.action
    reason = status.stack_completed(action)
    outputs = None
    if want is not None and action != Action.DELETE:
        outputs = await outputs_of(conn, stack.id, want, resolve)
    settled = await stacks.settle(
        conn, stack.id, trav.id, status=Status.COMPLETE, reason=reason, outputs=outputs,
        completed_template=action in status.CONVERGING, deleted=action == Action.DELETE)
    if settled:
        await stack_event(conn, stack, trav.id, action=action, state=Status.COMPLETE, reason=reason)
        await traversals.close(conn, trav.id)
        if stack.parent_id is not None and registry is not None and outputs is not None:
            await resource_refresh.refresh_parent(conn, stack, outputs, registry)


async def fail(conn: Conn, bus: Bus, stack: stacks.StackRow, trav: traversals.TraversalRow, reason: str,
               *, current: bool, want: desired.Desired | None = None,
               resolve: OutputsOf = inline_outputs) -> None:
    """The first failure of a traversal fails the stack and, unless disabled, asks for a rollback.

    With the traversal's desired state at hand, the stack's outputs are resolved as
    far as its resources allow, as Heat lists a failed stack's outputs. Without a
    rollback the traversal stays current, as Heat's does: what does not need the
    failed resource goes on to the end; what needs it never starts.
    """
    action = trav.action
    async with conn.transaction():
        if not await traversals.mark_failed(conn, trav.id):
            return
        rollback = not stack.disable_rollback and action in (Action.CREATE, Action.UPDATE) and current
        outputs = (await outputs_of(conn, stack.id, want, resolve)
                   if want is not None and action != Action.DELETE else None)
        if not await stacks.settle(conn, stack.id, trav.id, status=Status.FAILED, reason=reason,
                                   outputs=outputs):
            return
        await stack_event(conn, stack, trav.id, action=action, state=Status.FAILED, reason=reason)
        if rollback:
            await stacks.set_desired(conn, stack.id, action=Action.ROLLBACK,
                                     template_id=stack.prev_template_id, reason=reason)
            plan = await plan_requests.stage(conn, bus.names, stack, Action.ROLLBACK, reason="rollback",
                                             request_id=f"rollback-{trav.id}")
    if rollback:
        await plan_requests.send(Held(conn), bus, plan)
