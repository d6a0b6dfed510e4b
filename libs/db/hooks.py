"""Hooks nodes have reached: reached, cleared, resumed; what the api lists and the sweep re-queues."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Sequence

from libs.db import Conn
from libs.telemetry.propagation import Stored

_COLUMNS = ("traversal_id, node, hook, stack_id, resource_name, action, source, reached_at, deadline,"
            " on_timeout, cleared_at, cleared_by, resumed_at, traceparent, tracestate")


@dataclasses.dataclass(frozen=True)
class HookRow:
    traversal_id: uuid.UUID
    node: str
    hook: str
    stack_id: uuid.UUID
    resource_name: str
    action: str
    source: str
    reached_at: datetime.datetime
    deadline: datetime.datetime | None
    on_timeout: str
    cleared_at: datetime.datetime | None
    cleared_by: str | None
    resumed_at: datetime.datetime | None
    traceparent: str | None = None
    tracestate: str | None = None

    @property
    def waiting(self) -> bool:
        return self.cleared_at is None

    @property
    def trace(self) -> Stored:
        """The step that paused here: whoever lets the node go on continues its operation's trace."""
        return Stored(self.traceparent, self.tracestate)


async def get(conn: Conn, traversal_id: uuid.UUID, node: str, hook: str) -> HookRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM hooks WHERE traversal_id = $1 AND node = $2"
                              f" AND hook = $3", traversal_id, node, hook)
    return HookRow(**dict(row)) if row else None


async def reach(conn: Conn, *, traversal_id: uuid.UUID, node: str, hook: str, stack_id: uuid.UUID,
                resource_name: str, action: str, source: str, timeout_seconds: float | None,
                on_timeout: str, trace: Stored) -> bool:
    """Record that the node reached the hook; False if an earlier delivery already did."""
    inserted = await conn.fetchval(
        "INSERT INTO hooks (traversal_id, node, hook, stack_id, resource_name, action, source, deadline,"
        " on_timeout, traceparent, tracestate) VALUES ($1, $2, $3, $4, $5, $6, $7,"
        " CASE WHEN $8::float8 IS NULL THEN NULL ELSE now() + make_interval(secs => $8::float8) END, $9,"
        " $10, $11) ON CONFLICT DO NOTHING RETURNING true", traversal_id, node, hook, stack_id, resource_name,
        action, source, timeout_seconds, on_timeout, trace.traceparent, trace.tracestate)
    return bool(inserted)


async def clear(conn: Conn, traversal_id: uuid.UUID, node: str, hook: str, by: str) -> bool:
    """Clear a waiting hook; False if it was not waiting (cleared already, or never reached)."""
    done = await conn.fetchval("UPDATE hooks SET cleared_at = now(), cleared_by = $4 WHERE traversal_id = $1"
                               " AND node = $2 AND hook = $3 AND cleared_at IS NULL RETURNING true",
                               traversal_id, node, hook, by)
    return bool(done)


async def resumed(conn: Conn, traversal_id: uuid.UUID, node: str, hook: str) -> None:
    await conn.execute("UPDATE hooks SET resumed_at = now() WHERE traversal_id = $1 AND node = $2"
                       " AND hook = $3 AND resumed_at IS NULL", traversal_id, node, hook)


async def waiting(conn: Conn, stack_ids: Sequence[uuid.UUID], *, resource_name: str | None = None,
                  hook: str | None = None) -> list[HookRow]:
    """Hooks still waiting in the current traversals of these stacks, oldest first."""
    rows = await conn.fetch(
        f"SELECT {', '.join('h.' + c.strip() for c in _COLUMNS.split(','))} FROM hooks h"
        " JOIN stacks s ON s.id = h.stack_id AND s.current_traversal = h.traversal_id"
        " WHERE h.stack_id = ANY($1::uuid[]) AND h.cleared_at IS NULL AND s.status = 'IN_PROGRESS'"
        " AND ($2::text IS NULL OR h.resource_name = $2)"
        # A step reached again (``create:batch@2``) is cleared by its name alone too.
        " AND ($3::text IS NULL OR h.hook = $3 OR split_part(h.hook, '@', 1) = $3)"
        " ORDER BY h.reached_at, h.resource_name", list(stack_ids), resource_name, hook)
    return [HookRow(**dict(r)) for r in rows]


async def due(conn: Conn, *, resume_after: float, nudge_every: float, limit: int = 500) -> list[HookRow]:
    """Nodes a sweep should re-queue, marked as nudged.

    A cleared hook whose node has not gone on (the publish after clearing was
    lost), a hook past its own deadline, or one whose traversal ran out of time.
    """
    rows = await conn.fetch(
        f"WITH picked AS (SELECT h.traversal_id, h.node, h.hook FROM hooks h"
        f" JOIN traversals t ON t.id = h.traversal_id"
        f" JOIN stacks s ON s.id = h.stack_id AND s.current_traversal = t.id AND s.status = 'IN_PROGRESS'"
        f" JOIN traversal_nodes n ON n.traversal_id = h.traversal_id AND n.node = h.node AND NOT n.done"
        f" WHERE ((h.cleared_at IS NOT NULL AND h.resumed_at IS NULL"
        f"         AND h.cleared_at < now() - make_interval(secs => $1))"
        f"     OR (h.cleared_at IS NULL AND (h.deadline < now() OR t.deadline < now())))"
        f"   AND (h.nudged_at IS NULL OR h.nudged_at < now() - make_interval(secs => $2))"
        f" LIMIT $3 FOR UPDATE OF h SKIP LOCKED)"
        f" UPDATE hooks SET nudged_at = now() FROM picked WHERE hooks.traversal_id = picked.traversal_id"
        f" AND hooks.node = picked.node AND hooks.hook = picked.hook"
        f" RETURNING {', '.join('hooks.' + c.strip() for c in _COLUMNS.split(','))}",
        resume_after, nudge_every, limit)
    return [HookRow(**dict(r)) for r in rows]
