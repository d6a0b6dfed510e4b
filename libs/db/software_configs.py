"""``software_configs``: Heat's stored configs (immutable), and the derived configs of deployments."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any

import asyncpg

from libs.db import Conn

_COLUMNS = 'id, project, name, "group", config, hash, created_at'


@dataclasses.dataclass(frozen=True)
class ConfigRow:
    id: uuid.UUID
    project: str
    name: str
    group: str
    # Heat's {config, inputs, outputs, options}.
    config: dict[str, Any]
    # A derived config's SHA-256 of all its derived data (None: a config as a user stored it).
    hash: str | None
    created_at: datetime.datetime


def _row(record: Any) -> ConfigRow:
    return ConfigRow(**dict(record))


async def insert(conn: Conn, *, project: str, name: str, group: str, config: dict[str, Any],
                 hash: str | None = None, config_id: uuid.UUID | None = None) -> ConfigRow:
    """Store a config; with ``config_id`` given and stored already, the stored one is returned
    (a step that stores a config and is run again stores nothing twice)."""
    record = await conn.fetchrow(
        f'INSERT INTO software_configs (id, project, name, "group", config, hash)'
        f" VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING RETURNING {_COLUMNS}",
        config_id or uuid.uuid4(), project, name, group, config, hash)
    if record is None:
        record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM software_configs WHERE id = $1", config_id)
    assert record is not None
    return _row(record)


async def get(conn: Conn, config_id: uuid.UUID, project: str | None = None, *, lock: bool = False
              ) -> ConfigRow | None:
    """The config; with ``project``, only if it is that project's. ``lock``: held (FOR SHARE) until the
    transaction ends, so a deployment stored in it refers to a config no delete can take meanwhile."""
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM software_configs WHERE id = $1 AND ($2::text IS NULL OR project = $2)"
        f"{' FOR SHARE' if lock else ''}", config_id, project)
    return _row(record) if record else None


async def page(conn: Conn, project: str | None, *, limit: int | None, marker: uuid.UUID | None
               ) -> list[ConfigRow]:
    """Configs newest first (Heat's order), after ``marker`` (a marker that names no config is no
    marker, as in Heat); ``project`` None: every project's."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM software_configs WHERE ($1::text IS NULL OR project = $1)"
        " AND ($2::uuid IS NULL OR NOT EXISTS (SELECT 1 FROM software_configs WHERE id = $2)"
        " OR (created_at, id) < (SELECT created_at, id FROM software_configs WHERE id = $2))"
        " ORDER BY created_at DESC, id DESC LIMIT $3",
        project, marker, limit)
    return [_row(r) for r in records]


async def in_use(conn: Conn, config_id: uuid.UUID) -> bool:
    """Whether a deployment refers to the config (it cannot be deleted then)."""
    found = await conn.fetchval("SELECT 1 FROM software_deployments WHERE config_id = $1 LIMIT 1", config_id)
    return found is not None


async def delete(conn: Conn, config_id: uuid.UUID) -> bool:
    """Delete a config no deployment refers to; False when none was deleted."""
    try:
        async with conn.transaction():  # a savepoint in the caller's transaction, if any
            status = await conn.execute(
                "DELETE FROM software_configs c WHERE id = $1 AND NOT EXISTS"
                " (SELECT 1 FROM software_deployments d WHERE d.config_id = c.id)", config_id)
    except asyncpg.ForeignKeyViolationError:
        # A deployment that took it while this delete waited for its row: in use after all.
        return False
    return status.split()[-1] != "0"


async def count(conn: Conn, project: str) -> int:
    """How many configs the project has (Heat's max_software_configs_per_tenant counts them)."""
    value: int = await conn.fetchval("SELECT count(*) FROM software_configs WHERE project = $1", project)
    return value
