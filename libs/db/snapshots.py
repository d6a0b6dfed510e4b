"""``snapshots``: a stack's desired state and resource data at one moment."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

from libs.db import Conn
from libs.engine.status import Status

_COLUMNS = "id, stack_id, name, template_id, data, status, status_reason, created_at"


@dataclasses.dataclass(frozen=True)
class SnapshotRow:
    id: uuid.UUID
    stack_id: uuid.UUID
    name: str | None
    template_id: uuid.UUID | None
    data: dict[str, Any]
    status: str
    status_reason: str
    created_at: datetime.datetime


async def insert(conn: Conn, *, stack_id: uuid.UUID, name: str | None, template_id: uuid.UUID | None,
                 data: dict[str, Any], status: Status, status_reason: str = "") -> SnapshotRow:
    row = await conn.fetchrow(
        f"INSERT INTO snapshots (id, stack_id, name, template_id, data, status, status_reason)"
        f" VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING {_COLUMNS}",
        uuid.uuid4(), stack_id, name, template_id, data, status, status_reason)
    assert row is not None
    return SnapshotRow(**dict(row))


async def for_stack(conn: Conn, stack_id: uuid.UUID) -> list[SnapshotRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM snapshots WHERE stack_id = $1 ORDER BY created_at",
                            stack_id)
    return [SnapshotRow(**dict(r)) for r in rows]


async def get(conn: Conn, stack_id: uuid.UUID, snapshot_id: uuid.UUID) -> SnapshotRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM snapshots WHERE stack_id = $1 AND id = $2",
                              stack_id, snapshot_id)
    return SnapshotRow(**dict(row)) if row else None


async def resource_data(conn: Conn, snapshot_id: uuid.UUID, name: str) -> dict[str, str] | None:
    """What the snapshot recorded as one resource's data (read in the database: a snapshot can be large)."""
    value = await conn.fetchval("SELECT data->'resources'->$2->'resource_data' FROM snapshots WHERE id = $1",
                                snapshot_id, name)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else None


async def delete(conn: Conn, snapshot_id: uuid.UUID) -> None:
    await conn.execute("DELETE FROM snapshots WHERE id = $1", snapshot_id)
