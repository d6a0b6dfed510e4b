"""Webhook subscriptions and their deliveries: what the notifier sends, and what the api shows of it."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Sequence
from typing import Any

from libs.db import Conn
from libs.telemetry.propagation import Stored

_SUB_COLUMNS = "id, project, stack_id, url, secret, kinds, resource, hooks, source, created_at"
_DELIVERY_COLUMNS = ("id, subscription_id, notice_key, kind, body, status, attempts, last_error, last_status,"
                     " next_at, created_at, delivered_at, traceparent, tracestate")
_RETURNED = ", ".join("d." + c.strip() for c in _DELIVERY_COLUMNS.split(","))


@dataclasses.dataclass(frozen=True)
class Subscription:
    id: uuid.UUID
    project: str
    stack_id: uuid.UUID | None
    url: str
    secret: str
    kinds: list[str]
    resource: str
    hooks: list[str] | None
    source: str
    created_at: datetime.datetime | None = None


@dataclasses.dataclass(frozen=True)
class Delivery:
    id: uuid.UUID
    subscription_id: uuid.UUID
    notice_key: str
    kind: str
    body: dict[str, Any]
    status: str
    attempts: int
    last_error: str | None
    last_status: int | None
    next_at: datetime.datetime
    created_at: datetime.datetime
    delivered_at: datetime.datetime | None
    traceparent: str | None = None
    tracestate: str | None = None

    @property
    def trace(self) -> Stored:
        """The operation whose notice this is: the receiver gets its trace context."""
        return Stored(self.traceparent, self.tracestate)


async def add(conn: Conn, sub: Subscription) -> None:
    """Insert a subscription; one already there with that id is left as it is."""
    await conn.execute(
        f"INSERT INTO subscriptions ({_SUB_COLUMNS.removesuffix(', created_at')})"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING",
        sub.id, sub.project, sub.stack_id, sub.url, sub.secret, sub.kinds, sub.resource, sub.hooks,
        sub.source)


async def get(conn: Conn, project: str, sub_id: uuid.UUID) -> Subscription | None:
    row = await conn.fetchrow(f"SELECT {_SUB_COLUMNS} FROM subscriptions WHERE project = $1 AND id = $2",
                              project, sub_id)
    return Subscription(**dict(row)) if row else None


async def for_project(conn: Conn, project: str, stack_id: uuid.UUID | None = None) -> list[Subscription]:
    rows = await conn.fetch(f"SELECT {_SUB_COLUMNS} FROM subscriptions WHERE project = $1"
                            " AND ($2::uuid IS NULL OR stack_id = $2) ORDER BY created_at, id",
                            project, stack_id)
    return [Subscription(**dict(r)) for r in rows]


async def remove(conn: Conn, project: str, sub_id: uuid.UUID) -> bool:
    result = await conn.execute("DELETE FROM subscriptions WHERE project = $1 AND id = $2", project, sub_id)
    return result.endswith(" 1")


async def reaching(conn: Conn, project: str, stack_ids: Sequence[uuid.UUID]) -> list[Subscription]:
    """The project's subscriptions and those of the given stacks (a stack and the ones it is nested in)."""
    rows = await conn.fetch(f"SELECT {_SUB_COLUMNS} FROM subscriptions WHERE project = $1"
                            " AND (stack_id IS NULL OR stack_id = ANY($2::uuid[]))", project, list(stack_ids))
    return [Subscription(**dict(r)) for r in rows]


async def enqueue(conn: Conn, subscription_id: uuid.UUID, notice_key: str, kind: str, body: dict[str, Any],
                  *, trace: Stored) -> bool:
    """A delivery of one notice to one subscription; False if it was queued before (a redelivered notice)."""
    done = await conn.fetchval(
        "INSERT INTO deliveries (id, subscription_id, notice_key, kind, body, traceparent, tracestate)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7)"
        " ON CONFLICT (subscription_id, notice_key) DO NOTHING RETURNING true",
        uuid.uuid4(), subscription_id, notice_key, kind, body, trace.traceparent, trace.tracestate)
    return bool(done)


async def lease_due(conn: Conn, *, limit: int, lease_seconds: float) -> list[tuple[Delivery, Subscription]]:
    """Pending deliveries whose time has come, leased to this notifier so no other sends them meanwhile."""
    rows = await conn.fetch(
        f"WITH picked AS (SELECT id FROM deliveries WHERE status = 'pending' AND next_at <= now()"
        f" AND (leased_until IS NULL OR leased_until < now()) ORDER BY next_at LIMIT $1"
        f" FOR UPDATE SKIP LOCKED)"
        f" UPDATE deliveries d SET leased_until = now() + make_interval(secs => $2) FROM picked"
        f" WHERE d.id = picked.id RETURNING {_RETURNED}",
        limit, lease_seconds)
    deliveries = [Delivery(**dict(r)) for r in rows]
    if not deliveries:
        return []
    subs = await conn.fetch(f"SELECT {_SUB_COLUMNS} FROM subscriptions WHERE id = ANY($1::uuid[])",
                            list({d.subscription_id for d in deliveries}))
    by_id = {r["id"]: Subscription(**dict(r)) for r in subs}
    return [(d, by_id[d.subscription_id]) for d in deliveries if d.subscription_id in by_id]


async def delivered(conn: Conn, delivery_id: uuid.UUID, status_code: int) -> None:
    await conn.execute("UPDATE deliveries SET status = 'delivered', attempts = attempts + 1,"
                       " last_status = $2, last_error = NULL, delivered_at = now(), leased_until = NULL"
                       " WHERE id = $1",
                       delivery_id, status_code)


async def attempt_failed(conn: Conn, delivery_id: uuid.UUID, *, error: str, status_code: int | None,
                         retry_in: float | None) -> None:
    """Record a failed attempt: try again in ``retry_in`` seconds, or give up (None)."""
    await conn.execute(
        "UPDATE deliveries SET attempts = attempts + 1, last_error = $2, last_status = $3,"
        " leased_until = NULL, status = CASE WHEN $4::float8 IS NULL THEN 'failed' ELSE 'pending' END,"
        " next_at = CASE WHEN $4::float8 IS NULL THEN next_at ELSE now() + make_interval(secs => $4) END"
        " WHERE id = $1", delivery_id, error[:2000], status_code, retry_in)


async def deliveries_of(conn: Conn, subscription_id: uuid.UUID, *, limit: int = 100) -> list[Delivery]:
    rows = await conn.fetch(f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE subscription_id = $1"
                            " ORDER BY created_at DESC, id LIMIT $2", subscription_id, limit)
    return [Delivery(**dict(r)) for r in rows]
