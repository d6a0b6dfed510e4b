"""Publish plan requests that were committed but never published.

An api, worker or planner that dies between committing a desired state and
publishing its plan request leaves the request in ``plan_outbox``; without this
sweep the stack would wait in ``*_IN_PROGRESS`` forever. Any number of planners
may sweep: rows are picked with SKIP LOCKED and marked, so each goes out once
per round, under the trace of the operation that asked for it. A row that can
never be published or read is set aside as a dead letter, never retried.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from libs import background
from libs.db import dead_letters, plan_outbox
from libs.errors import describe, is_transient
from libs.messaging.payloads import Payload, PayloadError, PlanRequest, decode
from libs.runtime import Runtime
from libs.telemetry import logs
from services.planner.planning import give_up_plan

log = logs.logger("planner")
# A sender publishes within milliseconds of its commit; a row older than this was left behind.
PUBLISH_GRACE_SECONDS = 5.0
# How soon the same row may go out again should its publish not have been acked.
NUDGE_EVERY_SECONDS = 30.0
SOURCE = "plan-outbox"


async def sweep_once(rt: Runtime, *, older_than: float = PUBLISH_GRACE_SECONDS) -> int:
    async with rt.pool.acquire() as conn:
        due = await plan_outbox.due(conn, older_than=older_than, nudge_every=NUDGE_EVERY_SECONDS)
    for row in due:
        plan: Payload | PayloadError
        try:
            plan = decode(row.payload)
        except PayloadError as exc:
            plan = exc
        if not isinstance(plan, PlanRequest):
            # It would fail the same way every round, and hold up the rows behind it.
            await _set_aside(rt, row, f"no planner can read it: {plan}")
            continue
        with (rt.bus.tracer.start_as_current_span("publish left-behind plan request",
                                                  context=row.trace.context()),
              logs.log_context(stack_id=plan.stack_id)):
            try:
                # The sender's own message id: should its publish have landed after all, JetStream drops this.
                await rt.bus.publish(row.subject, plan, msg_id=row.msg_id)
            except Exception as exc:
                if is_transient(exc):
                    raise  # NATS is away: the next round tries again
                await _set_aside(rt, row, describe(exc))
                # The stack waits for a plan nobody will make: its action fails, with the reason.
                await give_up_plan(rt, plan, exc)
                continue
            async with rt.pool.acquire() as conn:
                await plan_outbox.remove(conn, row.msg_id)
            log.warning("published a left-behind plan request",
                        extra={"action": plan.action, "request_id": plan.request_id})
    return len(due)


async def _set_aside(rt: Runtime, row: plan_outbox.PendingPlan, reason: str) -> None:
    """A dead letter (and an event on the stack) in place of the row, and one log line."""
    async with rt.pool.acquire() as conn, conn.transaction():
        letter = await dead_letters.add(conn, source=SOURCE, subject=row.subject, msg_id=row.msg_id,
                                        stack_id=row.stack_id, reason=f"plan request set aside: {reason}",
                                        payload=row.payload)
        await plan_outbox.remove(conn, row.msg_id)
    log.error("dead letter %s: plan request set aside: %s", letter, reason,
              extra={"dead_letter": letter, "msg_id": row.msg_id, "stack_id": str(row.stack_id)})


def sweeping(rt: Runtime) -> AbstractAsyncContextManager[None]:
    return background.every(rt.settings.plan_sweep_seconds, lambda: sweep_once(rt),
                            name="plan outbox sweep", log=log)
