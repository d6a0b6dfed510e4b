"""``plan_outbox``: plan requests committed with the change that asks for them, until published."""

from __future__ import annotations

import dataclasses
import uuid

from libs.db import Conn
from libs.telemetry.propagation import Stored


@dataclasses.dataclass(frozen=True)
class PendingPlan:
    msg_id: str
    stack_id: uuid.UUID
    subject: str
    payload: bytes
    traceparent: str | None
    tracestate: str | None = None

    @property
    def trace(self) -> Stored:
        """The operation that asked for the plan."""
        return Stored(self.traceparent, self.tracestate)


async def add(conn: Conn, *, msg_id: str, stack_id: uuid.UUID, subject: str, payload: bytes,
              trace: Stored) -> None:
    """Record a request; an older one for the same stack that is still here is superseded.

    The planner plans the stack's desired state as it is when the request
    arrives, so the newest request stands for every older one; dropping the
    older rows keeps a late sweep from planning an outdated action after it.
    """
    await conn.execute("DELETE FROM plan_outbox WHERE stack_id = $1", stack_id)
    await conn.execute("INSERT INTO plan_outbox (msg_id, stack_id, subject, payload, traceparent, tracestate)"
                       " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (msg_id) DO NOTHING",
                       msg_id, stack_id, subject, payload, trace.traceparent, trace.tracestate)


async def remove(conn: Conn, msg_id: str) -> None:
    await conn.execute("DELETE FROM plan_outbox WHERE msg_id = $1", msg_id)


async def due(conn: Conn, *, older_than: float, nudge_every: float, limit: int = 500) -> list[PendingPlan]:
    """Requests whose sender did not publish them in time, marked as nudged (each by one sweeper)."""
    rows = await conn.fetch(
        "WITH picked AS (SELECT msg_id FROM plan_outbox"
        " WHERE created_at < now() - make_interval(secs => $1)"
        "   AND (nudged_at IS NULL OR nudged_at < now() - make_interval(secs => $2))"
        " ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)"
        " UPDATE plan_outbox o SET nudged_at = now() FROM picked WHERE o.msg_id = picked.msg_id"
        " RETURNING o.msg_id, o.stack_id, o.subject, o.payload, o.traceparent, o.tracestate",
        older_than, nudge_every, limit)
    return [PendingPlan(**dict(r)) for r in rows]


async def pending(conn: Conn) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM plan_outbox"))
