"""Servers in PostgreSQL: insert, read (settling due transitions first), page, change, remove."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud import listing, netcore
from libs.simcloud.nova.lifecycle import BOOT_FAULT, SETTLED, Task

TABLE = "simcloud.servers"

_CASES = " ".join(f"WHEN '{task.value}' THEN '{status}'" for task, status in SETTLED.items()
                  if task is not Task.BOOT)
# Rows another request is settling are skipped, not waited for (no lock-order deadlock between
# concurrent reads); they show their old status until that request commits.
_SETTLE = f"""
WITH due AS (SELECT id FROM simcloud.servers
             WHERE task IS NOT NULL AND task <> 'delete' AND due_at <= $1 {{only}}
             FOR UPDATE SKIP LOCKED)
UPDATE simcloud.servers SET
  status = CASE WHEN task = 'boot' THEN (CASE WHEN fails THEN 'ERROR' ELSE 'ACTIVE' END)
                ELSE (CASE task {_CASES} ELSE status END) END,
  fault = CASE WHEN task = 'boot' AND fails THEN jsonb_build_object('code', 500, 'message', $2::text,
          'created', to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')) ELSE fault END,
  launched_at = CASE WHEN task = 'boot' AND NOT fails THEN due_at ELSE launched_at END,
  updated_at = due_at, task = NULL, due_at = NULL
FROM due WHERE servers.id = due.id"""


async def settle(conn: Conn, now: datetime.datetime, ids: Sequence[str] | None = None) -> None:
    """Finish the transitions that are due (of ``ids``, or of every server); remove the deletes due."""
    if ids is None:
        await conn.execute(_SETTLE.format(only=""), now, BOOT_FAULT)
        gone = await conn.fetch("SELECT id FROM simcloud.servers WHERE task = 'delete' AND due_at <= $1", now)
    else:
        await conn.execute(_SETTLE.format(only="AND id = ANY($3)"), now, BOOT_FAULT, list(ids))
        gone = await conn.fetch("SELECT id FROM simcloud.servers WHERE task = 'delete' AND due_at <= $1"
                                " AND id = ANY($2)", now, list(ids))
    for row in gone:
        await remove(conn, row["id"])


async def get(conn: Conn, server_id: str, now: datetime.datetime) -> asyncpg.Record | None:
    row = await conn.fetchrow("SELECT * FROM simcloud.servers WHERE id = $1", server_id)
    if row is None or row["task"] is None or row["due_at"] > now:
        return row  # nothing due: one query, the common case of a poll
    await settle(conn, now, [server_id])
    return await conn.fetchrow("SELECT * FROM simcloud.servers WHERE id = $1", server_id)


async def page(conn: Conn, where: listing.Where, pages: listing.Paging,
               now: datetime.datetime) -> list[asyncpg.Record]:
    await settle(conn, now)
    return await listing.page(conn, TABLE, where, pages)


async def for_agents(conn: Conn, now: datetime.datetime) -> list[tuple[str, str, str | None]]:
    """(id, status, user data) of every server, settled first: which have an agent (simcloud.agents)."""
    await settle(conn, now)
    rows = await conn.fetch("SELECT id, status, data->>'user_data' AS user_data FROM simcloud.servers"
                            " WHERE task IS DISTINCT FROM 'delete'")
    return [(r["id"], r["status"], r["user_data"]) for r in rows]


async def insert(conn: Conn, values: dict[str, Any]) -> asyncpg.Record:
    columns = list(values)
    marks = ", ".join(f"${i + 1}" for i in range(len(columns)))
    row = await conn.fetchrow(
        f"INSERT INTO simcloud.servers ({', '.join(columns)}) VALUES ({marks}) RETURNING *", *values.values())
    assert row is not None
    return row


async def update(conn: Conn, server_id: str, values: dict[str, Any]) -> asyncpg.Record | None:
    sets = ", ".join(f"{column} = ${i + 2}" for i, column in enumerate(values))
    return await conn.fetchrow(
        f"UPDATE simcloud.servers SET {sets}, updated_at = now() WHERE id = $1 RETURNING *",
        server_id, *values.values())


async def start_task(conn: Conn, server_id: str, task: Task, status: str | None, *, due: datetime.datetime,
                     extra: dict[str, Any] | None = None) -> asyncpg.Record | None:
    values: dict[str, Any] = {"task": task.value, "due_at": due, **(extra or {})}
    if status is not None:
        values["status"] = status
    return await update(conn, server_id, values)


async def remove(conn: Conn, server_id: str) -> None:
    """The server is gone: its ports released, volumes detached (or deleted with it), group left."""
    async with conn.transaction():
        attached = await conn.fetch("DELETE FROM simcloud.volume_attachments WHERE server_id = $1"
                                    " RETURNING volume_id, delete_on_termination", server_id)
        doomed = [a["volume_id"] for a in attached if a["delete_on_termination"]]
        kept = [a["volume_id"] for a in attached if not a["delete_on_termination"]]
        if kept:
            await conn.execute("UPDATE simcloud.volumes SET status = 'available', updated_at = now()"
                               " WHERE id = ANY($1)", kept)
        if doomed:
            await conn.execute("DELETE FROM simcloud.volumes WHERE id = ANY($1)", doomed)
        await netcore.release_ports(conn, server_id)
        await conn.execute("UPDATE simcloud.server_groups SET members = array_remove(members, $1)"
                           " WHERE $1 = ANY(members)", server_id)
        await conn.execute("DELETE FROM simcloud.servers WHERE id = $1", server_id)


async def attachments(conn: Conn, server_ids: Sequence[str]) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT * FROM simcloud.volume_attachments WHERE server_id = ANY($1)"
                                 " ORDER BY created_at, device", list(server_ids)))


async def groups(conn: Conn, server_ids: Sequence[str]) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT id, members FROM simcloud.server_groups WHERE members && $1::text[]",
                                 list(server_ids)))
