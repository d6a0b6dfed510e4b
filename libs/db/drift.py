"""``drift``: what the observer saw of resources that differs from their record, once per change."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Sequence
from typing import Any

from libs.db import Conn
from libs.engine.drift import Closed, Drift, DriftKind, Response


@dataclasses.dataclass(frozen=True)
class Watched:
    """A resource the observer compares with the cloud, with its open drift record if any."""

    resource_id: int
    stack_id: uuid.UUID
    stack_name: str
    project: str
    # The stack's desired state when listed: a heal converges to it, and only to it.
    template_id: uuid.UUID | None
    # The stack's parent, for a nested stack (None: a root stack).
    parent_id: uuid.UUID | None
    name: str
    type: str
    physical_id: str
    properties: dict[str, Any] | None
    data: dict[str, Any]
    version: int
    open_id: int | None
    open: Drift | None
    # The environment's ``convergence`` section of the stack's desired state (None: not given).
    convergence: Any = None


@dataclasses.dataclass(frozen=True)
class DriftRow:
    id: int
    stack_id: uuid.UUID
    resource_name: str
    kind: str
    fields: list[str]
    detail: str
    action_taken: str
    detected_at: datetime.datetime
    resolved_at: datetime.datetime | None


async def watched(conn: Conn, types: Sequence[str]) -> list[Watched]:
    """Current resources of ``types`` that exist and are at rest, in stacks not busy with an action.

    A resource under way (its row IN_PROGRESS or its stack's action running) is what a
    traversal is changing: the cloud differing from its record then is not drift.
    """
    rows = await conn.fetch(
        "SELECT r.id AS resource_id, r.stack_id, s.name AS stack_name, s.project, s.template_id,"
        " s.parent_id, r.name, r.type, r.physical_id, r.properties, r.data, r.version,"
        " d.id AS open_id, d.kind, d.fields, d.detail,"
        " t.environment -> 'convergence' AS convergence"
        " FROM resources r JOIN stacks s ON s.id = r.stack_id"
        " LEFT JOIN raw_templates t ON t.id = s.template_id"
        " LEFT JOIN drift d ON d.resource_id = r.id AND d.resolved_at IS NULL"
        " WHERE r.is_current AND r.type = ANY($1::text[]) AND r.physical_id IS NOT NULL"
        " AND r.status = 'COMPLETE' AND r.action <> 'DELETE'"
        " AND s.deleted_at IS NULL AND s.status <> 'IN_PROGRESS'"
        " ORDER BY r.id", list(types))
    return [Watched(
        resource_id=r["resource_id"], stack_id=r["stack_id"], stack_name=r["stack_name"],
        project=r["project"], template_id=r["template_id"], parent_id=r["parent_id"], name=r["name"],
        type=r["type"], physical_id=r["physical_id"],
        properties=r["properties"], data=r["data"], version=r["version"], open_id=r["open_id"],
        open=None if r["open_id"] is None else Drift(DriftKind(r["kind"]), tuple(r["fields"]), r["detail"]),
        convergence=r["convergence"])
        for r in rows]


async def unchanged(conn: Conn, watched_row: Watched) -> bool:
    """Whether the resource is still as it was when listed: current, at rest, in a stack at rest.

    Checked under a row lock in the transaction that records drift, so what a traversal
    changed meanwhile (a replacement, a delete) is not reported as drift.
    """
    found = await conn.fetchval(
        "SELECT 1 FROM resources r JOIN stacks s ON s.id = r.stack_id WHERE r.id = $1 AND r.version = $2"
        " AND r.is_current AND r.status = 'COMPLETE' AND s.deleted_at IS NULL AND s.status <> 'IN_PROGRESS'"
        " FOR SHARE OF r", watched_row.resource_id, watched_row.version)
    return found is not None


# A record closed while its heal was under way was healed.
_CLOSED = ("resolved_at = now(), action_taken = CASE WHEN action_taken = 'healing' THEN 'healed'"
           " ELSE action_taken END")


async def close(conn: Conn, drift_id: int) -> Response | None:
    """Close an open record; what it says was done (None: it was closed already)."""
    taken = await conn.fetchval(
        f"UPDATE drift SET {_CLOSED} WHERE id = $1 AND resolved_at IS NULL RETURNING action_taken", drift_id)
    return Response(taken) if taken is not None else None


async def open_record(conn: Conn, watched_row: Watched, drift: Drift, response: Response) -> int | None:
    """Open a record; None when one is already open for the resource (another observer's sight).

    An accepted drift is closed as it is written: the record now holds what the cloud has.
    """
    value: int | None = await conn.fetchval(
        "INSERT INTO drift (stack_id, resource_id, resource_name, kind, fields, detail, action_taken,"
        " resolved_at) VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $8 THEN now() END)"
        " ON CONFLICT (resource_id) WHERE resolved_at IS NULL DO NOTHING RETURNING id",
        watched_row.stack_id, watched_row.resource_id, watched_row.name, drift.kind.value,
        list(drift.fields), drift.detail, response.value, response == Response.ACCEPTED)
    return value


async def heals_since(conn: Conn, stack_id: uuid.UUID, resource_name: str, seconds: float) -> int:
    """How many heals of the resource (by name: a heal may replace its row) were asked lately."""
    count: int = await conn.fetchval(
        "SELECT count(*) FROM drift WHERE stack_id = $1 AND resource_name = $2"
        " AND action_taken IN ('healing', 'healed', 'heal failed')"
        " AND detected_at > now() - make_interval(secs => $3)",
        stack_id, resource_name, seconds)
    return count


@dataclasses.dataclass(frozen=True)
class Unwatched:
    """A record closed because its resource row is no longer current, and what the stack has now."""

    stack_id: uuid.UUID
    resource_name: str
    drift: Drift
    action_taken: Response
    closed: Closed
    # The stack's current resource of that name (a replacement), else the closed row's; "" if gone.
    physical_id: str
    type: str


async def close_unwatched(conn: Conn) -> list[Unwatched]:
    """Close the records of resources that are gone from the stack or no longer current, and mark
    heals that ended in a failed stack (the drift stays open: it is still there).

    Each record closes once however many observers run this (the update locks the row and
    checks it is open again), so its resolved event is written once.
    """
    rows = await conn.fetch(
        f"WITH closed AS (UPDATE drift d SET {_CLOSED} WHERE d.resolved_at IS NULL AND NOT EXISTS"
        " (SELECT 1 FROM resources r WHERE r.id = d.resource_id AND r.is_current)"
        " RETURNING d.stack_id, d.resource_id, d.resource_name, d.kind, d.fields, d.detail, d.action_taken)"
        " SELECT c.*, now_r.physical_id AS now_physical, now_r.type AS now_type,"
        " old_r.physical_id AS old_physical, old_r.type AS old_type FROM closed c"
        " JOIN stacks s ON s.id = c.stack_id AND s.deleted_at IS NULL"
        " LEFT JOIN resources old_r ON old_r.id = c.resource_id"
        " LEFT JOIN LATERAL (SELECT r.physical_id, r.type FROM resources r WHERE r.stack_id = c.stack_id"
        " AND r.name = c.resource_name AND r.is_current LIMIT 1) now_r ON true")
    await conn.execute(
        "UPDATE drift d SET action_taken = 'heal failed' FROM stacks s WHERE s.id = d.stack_id"
        " AND d.resolved_at IS NULL AND d.action_taken = 'healing' AND s.status = 'FAILED'"
        " AND s.updated_at > d.detected_at")
    return [Unwatched(
        stack_id=r["stack_id"], resource_name=r["resource_name"],
        drift=Drift(DriftKind(r["kind"]), tuple(r["fields"]), r["detail"]),
        action_taken=Response(r["action_taken"]),
        closed=Closed.MADE_AGAIN if r["now_type"] is not None else Closed.REMOVED,
        physical_id=str(r["now_physical"] or r["old_physical"] or ""),
        type=str(r["now_type"] or r["old_type"] or "")) for r in rows]


async def for_stack(conn: Conn, stack_id: uuid.UUID) -> list[DriftRow]:
    rows = await conn.fetch(
        "SELECT id, stack_id, resource_name, kind, fields, detail, action_taken, detected_at, resolved_at"
        " FROM drift WHERE stack_id = $1 ORDER BY detected_at, id", stack_id)
    return [DriftRow(**dict(r)) for r in rows]



async def known_gone(conn: Conn, project: str, physical_id: str) -> bool:
    """Whether a current resource of the project with this physical id is open drift of kind gone
    (the observer found it deleted behind Ember's back)."""
    found = await conn.fetchval(
        "SELECT 1 FROM drift d JOIN resources r ON r.id = d.resource_id JOIN stacks s ON s.id = r.stack_id"
        " WHERE d.resolved_at IS NULL AND d.kind = $3 AND r.is_current AND r.physical_id = $2"
        " AND s.project = $1 LIMIT 1", project, physical_id, DriftKind.GONE.value)
    return found is not None
