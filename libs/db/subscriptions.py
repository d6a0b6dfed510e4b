"""Webhook subscriptions and their deliveries: what the notifier sends, and what the api shows of it."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
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


# Environment sinks are subscriptions with ids derived from where they are declared.
_SINK_NAMESPACE = uuid.UUID("5b0f8d3e-6a8e-4c61-9a55-3c1f4ad7e2b1")


def environment_sinks(project: str, stack_id: uuid.UUID, sinks: Any) -> list[Subscription]:
    """An environment's ``event_sinks`` of type ``webhook``, as the stack's subscriptions."""
    made = []
    for index, sink in enumerate(sinks if isinstance(sinks, list) else []):
        if not isinstance(sink, dict) or sink.get("type") != "webhook":
            continue
        target = str(sink["target"])
        hooks = sink.get("hooks")
        made.append(Subscription(
            id=uuid.uuid5(_SINK_NAMESPACE, f"{stack_id}:{index}:{target}"), project=project,
            stack_id=stack_id, url=target, secret=str(sink.get("secret") or ""),
            kinds=[str(k) for k in sink.get("kinds") or ["event", "hook"]],
            resource=str(sink.get("resource") or "*"),
            hooks=[str(h) for h in hooks] if isinstance(hooks, list) else None, source="environment"))
    return made


async def follow_environment(conn: Conn, stack_id: uuid.UUID, project: str, template_id: uuid.UUID) -> None:
    """Make the stack's environment subscriptions those of the desired state ``template_id``.

    Called in the transaction that points the stack at that desired state, so the
    subscriptions commit with it, before any event of its operation exists: the
    notifier finds them for the very first notice (it made them itself when a
    notice came by, and a notice handled meanwhile in another transaction missed
    them: issue 14). A sink the new environment no longer has stops receiving.
    """
    sinks = await conn.fetchval("SELECT environment -> 'event_sinks' FROM raw_templates WHERE id = $1",
                                template_id)
    wanted = environment_sinks(project, stack_id, sinks)
    await conn.execute("DELETE FROM subscriptions WHERE stack_id = $1 AND source = 'environment'"
                       " AND NOT (id = ANY($2::uuid[]))", stack_id, [sub.id for sub in wanted])
    for sub in wanted:
        await conn.execute(
            f"INSERT INTO subscriptions ({_SUB_COLUMNS.removesuffix(', created_at')})"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO UPDATE SET"
            " url = EXCLUDED.url, secret = EXCLUDED.secret, kinds = EXCLUDED.kinds,"
            " resource = EXCLUDED.resource, hooks = EXCLUDED.hooks",
            sub.id, sub.project, sub.stack_id, sub.url, sub.secret, sub.kinds, sub.resource, sub.hooks,
            sub.source)


async def follow_environments_not_followed(conn: Conn) -> int:
    """Stacks whose environment declares ``event_sinks`` that are not yet their subscriptions (made
    before sinks were committed with their environment): follow them now; how many stacks."""
    rows = await conn.fetch(
        "SELECT s.id, s.project, s.template_id FROM stacks s JOIN raw_templates t ON t.id = s.template_id"
        " WHERE s.deleted_at IS NULL AND CASE WHEN json_typeof(t.environment -> 'event_sinks') = 'array'"
        " THEN json_array_length(t.environment -> 'event_sinks') > 0 ELSE false END AND NOT EXISTS"
        " (SELECT 1 FROM subscriptions u WHERE u.stack_id = s.id AND u.source = 'environment')")
    for row in rows:
        await follow_environment(conn, row["id"], row["project"], row["template_id"])
    return len(rows)


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


async def reaching(conn: Conn, project: str, stack_id: uuid.UUID, *, depth: int = 64) -> list[Subscription]:
    """The project's subscriptions and those of the stack and of the stacks it is nested in.

    One statement: the notifier asks it for every notice, and most reach none.
    """
    rows = await conn.fetch(
        "WITH RECURSIVE up AS (SELECT id, parent_id, 1 AS level FROM stacks WHERE id = $2"
        " UNION ALL SELECT s.id, s.parent_id, up.level + 1 FROM stacks s JOIN up ON s.id = up.parent_id"
        " WHERE up.level < $3)"
        f" SELECT {_SUB_COLUMNS} FROM subscriptions WHERE project = $1"
        " AND (stack_id IS NULL OR stack_id IN (SELECT id FROM up))", project, stack_id, depth)
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
