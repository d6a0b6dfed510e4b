"""Asking the planner for a traversal without ever losing the request.

A request is recorded in ``plan_outbox`` inside the transaction that changes
the stack's desired state (:func:`stage`), and published once that commits
(:func:`send`). A process that dies in between leaves the row behind; the
planner's sweep (:mod:`services.planner.outbox_sweep`) publishes it. The same
message id each time lets JetStream drop a second copy, and the planner plans
each request id once.
"""

from __future__ import annotations

import uuid

from libs.db import Conn, plan_outbox
from libs.db.pool import Connections
from libs.db.stacks import StackRow
from libs.engine.status import Action
from libs.errors import Undeliverable
from libs.messaging.bus import Bus
from libs.messaging.failures import BUS_ERROR
from libs.messaging.payloads import PlanRequest
from libs.messaging.subjects import Names
from libs.telemetry import logs
from libs.telemetry.propagation import Stored

log = logs.logger("plan")


async def stage(conn: Conn, names: Names, stack: StackRow, action: Action, *, reason: str,
                request_id: str | None = None, converge: bool = False, snapshot_id: str = ""
                ) -> PlanRequest:
    """A request for ``action`` on ``stack``, recorded in the caller's transaction; :func:`send` it
    after commit. A fresh request id unless the caller has one that a retry must repeat."""
    plan = PlanRequest(project=stack.project, stack_id=str(stack.id), reason=reason, action=action,
                       request_id=request_id or uuid.uuid4().hex, converge=converge,
                       snapshot_id=snapshot_id)
    await plan_outbox.add(conn, msg_id=plan.msg_id, stack_id=stack.id,
                          subject=names.plan(plan.project, plan.stack_id), payload=plan.to_bytes(),
                          trace=Stored.of())
    return plan


async def send(pool: Connections, bus: Bus, plan: PlanRequest) -> None:
    """Publish a staged request and forget it; should this fail, the sweep publishes it later.

    A failed publish is not the caller's error: the request is committed and
    will be planned, so answering the user with a failure would be untrue.
    """
    try:
        await bus.publish(bus.names.plan(plan.project, plan.stack_id), plan, msg_id=plan.msg_id)
    except (TimeoutError, BUS_ERROR, OSError, Undeliverable) as exc:
        with logs.log_context(stack_id=plan.stack_id):
            log.warning("plan request not published, left for the planners' sweep: %r", exc)
        return
    async with pool.acquire() as conn:
        await plan_outbox.remove(conn, plan.msg_id)
