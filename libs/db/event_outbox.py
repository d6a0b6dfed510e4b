"""The events not yet published on NATS: taken oldest first, then marked published.

Every event row is written unpublished; the notifier takes a batch (locked, so
two notifiers never take the same rows), publishes each and marks the batch.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Sequence

from libs.db import Conn
from libs.telemetry.propagation import Stored


@dataclasses.dataclass(frozen=True)
class PendingEvent:
    seq: int
    id: uuid.UUID
    stack_id: uuid.UUID
    project: str
    stack_name: str
    resource_name: str
    physical_resource_id: str
    resource_type: str
    action: str
    status: str
    reason: str
    traversal_id: uuid.UUID | None
    created_at: datetime.datetime
    written_by: Stored  # the trace of the operation that wrote it


async def take(conn: Conn, limit: int) -> list[PendingEvent]:
    """Up to ``limit`` unpublished events, oldest first, locked to the caller's transaction.

    Rows another transaction holds are skipped, not waited for.
    """
    rows = await conn.fetch(
        "SELECT e.seq, e.id, e.stack_id, s.project, s.name AS stack_name, e.resource_name,"
        " e.physical_resource_id, e.resource_type, e.action, e.status, e.reason, e.traversal_id,"
        " e.created_at, e.traceparent, e.tracestate"
        " FROM events e JOIN stacks s ON s.id = e.stack_id WHERE NOT e.published ORDER BY e.seq LIMIT $1"
        " FOR UPDATE OF e SKIP LOCKED", limit)
    out = []
    for row in rows:
        fields = dict(row)
        written_by = Stored(fields.pop("traceparent"), fields.pop("tracestate"))
        out.append(PendingEvent(**fields, written_by=written_by))
    return out


async def mark_published(conn: Conn, seqs: Sequence[int]) -> None:
    await conn.execute("UPDATE events SET published = true WHERE seq = ANY($1::bigint[])", list(seqs))
