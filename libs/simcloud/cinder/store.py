"""Cinder's SQL: volumes settled by the clock, their attachments and types, snapshots, quotas."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud.quota_store import QuotaTable

DEFAULT_QUOTAS = {"volumes": 10, "gigabytes": 1000, "snapshots": 10, "per_volume_gigabytes": -1,
                  "backups": 10, "backup_gigabytes": 1000, "groups": 10}
_TABLES = ("simcloud.volumes", "simcloud.volume_snapshots")


async def settle(conn: Conn, now: float) -> None:
    """Finish every transition whose time has come: the next status, or the row gone.

    Cinder calls it before each answer; Nova may call it before it reads a volume's status.
    """
    for table in _TABLES:
        await conn.execute(
            f"DELETE FROM {table} WHERE data ? 'next_status' AND data->>'next_status' = 'deleted'"
            " AND (data->>'ready_at')::float8 <= $1", now)
        await conn.execute(
            f"UPDATE {table} SET status = data->>'next_status', data = data - 'next_status' - 'ready_at',"
            " updated_at = now() WHERE data ? 'next_status' AND (data->>'ready_at')::float8 <= $1", now)


async def volume(conn: Conn, volume_id: str, project_id: str | None, *,
                 lock: bool = False) -> asyncpg.Record | None:
    if project_id is None:
        return await conn.fetchrow("SELECT * FROM simcloud.volumes WHERE id = $1"
                                   + (" FOR UPDATE" if lock else ""), volume_id)
    return await conn.fetchrow("SELECT * FROM simcloud.volumes WHERE id = $1 AND project_id = $2"
                               + (" FOR UPDATE" if lock else ""), volume_id, project_id)


async def attachments(conn: Conn, volume_ids: Sequence[str]) -> dict[str, list[asyncpg.Record]]:
    found: dict[str, list[asyncpg.Record]] = {}
    for row in await conn.fetch("SELECT * FROM simcloud.volume_attachments WHERE volume_id = ANY($1)"
                                " ORDER BY created_at", list(volume_ids)):
        found.setdefault(row["volume_id"], []).append(row)
    return found


async def insert_volume(conn: Conn, *, volume_id: str, project_id: str, name: str, size: int, status: str,
                        data: Mapping[str, Any]) -> None:
    await conn.execute("INSERT INTO simcloud.volumes (id, project_id, name, size, status, data)"
                       " VALUES ($1, $2, $3, $4, $5, $6)",
                       volume_id, project_id, name, size, status, dict(data))


async def update_volume(conn: Conn, volume_id: str, *, name: str, size: int, status: str,
                        data: Mapping[str, Any]) -> None:
    await conn.execute("UPDATE simcloud.volumes SET name = $2, size = $3, status = $4, data = $5,"
                       " updated_at = now() WHERE id = $1", volume_id, name, size, status, dict(data))


async def types(conn: Conn) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT * FROM simcloud.volume_types ORDER BY name"))


async def find_type(conn: Conn, name_or_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM simcloud.volume_types WHERE id = $1 OR name = $1"
                               " ORDER BY (id = $1) DESC LIMIT 1", name_or_id)


async def snapshot(conn: Conn, snapshot_id: str, project_id: str | None) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM simcloud.volume_snapshots WHERE id = $1"
                               " AND ($2::text IS NULL OR project_id = $2)", snapshot_id, project_id)


async def snapshots_of(conn: Conn, volume_id: str) -> int:
    found = await conn.fetchval("SELECT count(*) FROM simcloud.volume_snapshots WHERE volume_id = $1",
                                volume_id)
    return int(found or 0)


QUOTAS = QuotaTable("simcloud.volume_quotas", DEFAULT_QUOTAS)


async def quotas(conn: Conn, project_id: str) -> dict[str, int]:
    return await QUOTAS.limits(conn, project_id)


async def set_quotas(conn: Conn, project_id: str, limits: Mapping[str, int]) -> None:
    await QUOTAS.set(conn, project_id, limits)


async def usage(conn: Conn, project_id: str) -> dict[str, int]:
    row = await conn.fetchrow("SELECT count(*) AS volumes, coalesce(sum(size), 0) AS gigabytes"
                              " FROM simcloud.volumes WHERE project_id = $1", project_id)
    snaps = await conn.fetchrow("SELECT count(*) AS snapshots, coalesce(sum(size), 0) AS gigabytes"
                                " FROM simcloud.volume_snapshots WHERE project_id = $1", project_id)
    assert row is not None and snaps is not None
    return {"volumes": int(row["volumes"]), "gigabytes": int(row["gigabytes"]) + int(snaps["gigabytes"]),
            "snapshots": int(snaps["snapshots"])}
