"""``resources``: one row per physical incarnation; every write fenced by ``version``."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from libs.db import Conn

_COLUMNS = ("id, stack_id, name, type, is_current, physical_id, action, status, status_reason,"
            " template_id, traversal_id, action_started, properties, reference, attributes, data,"
            " requires, replaces, deletion_policy, version, created_at, updated_at")


@dataclasses.dataclass(frozen=True)
class ResourceRow:
    id: int
    stack_id: uuid.UUID
    name: str
    type: str
    is_current: bool
    physical_id: str | None
    action: str
    status: str
    status_reason: str
    template_id: uuid.UUID | None
    traversal_id: uuid.UUID | None
    action_started: datetime.datetime | None
    properties: dict[str, Any] | None
    reference: Any
    attributes: dict[str, Any]
    data: dict[str, Any]
    requires: list[int]
    replaces: int | None
    deletion_policy: str
    version: int
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


async def for_stack(conn: Conn, stack_id: uuid.UUID) -> list[ResourceRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 ORDER BY id", stack_id)
    return [ResourceRow(**dict(r)) for r in rows]


async def get(conn: Conn, resource_id: int) -> ResourceRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM resources WHERE id = $1", resource_id)
    return ResourceRow(**dict(row)) if row else None


async def current_by_names(conn: Conn, stack_id: uuid.UUID, names: Iterable[str]) -> dict[str, ResourceRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 AND is_current"
                            " AND name = ANY($2::text[])", stack_id, list(names))
    return {r["name"]: ResourceRow(**dict(r)) for r in rows}


async def insert_new(conn: Conn, stack_id: uuid.UUID, items: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Rows for resources new to the stack (INIT); returns name -> id."""
    pairs = list(items)
    names = [n for n, _ in pairs]
    types = [t for _, t in pairs]
    rows = await conn.fetch(
        "INSERT INTO resources (stack_id, name, type) SELECT $1, n, t FROM unnest($2::text[], $3::text[])"
        " AS x(n, t) RETURNING id, name", stack_id, names, types)
    return {r["name"]: r["id"] for r in rows}


async def insert_replacement(conn: Conn, old: ResourceRow, type_name: str) -> int:
    rid = await conn.fetchval(
        "INSERT INTO resources (stack_id, name, type, is_current, replaces) VALUES ($1, $2, $3, false, $4)"
        " RETURNING id", old.stack_id, old.name, type_name, old.id)
    assert isinstance(rid, int)
    return rid


async def write(conn: Conn, row: ResourceRow, **changes: Any) -> ResourceRow | None:
    """Compare-and-set: apply ``changes`` only if nobody wrote the row since ``row`` was read.

    Returns the new row, or None when the write lost a race (then it is dropped,
    never retried blindly: the caller re-reads and decides again).
    """
    sets = ["version = version + 1", "updated_at = now()"]
    args: list[Any] = [row.id, row.version]
    for key, value in changes.items():
        args.append(value)
        sets.append(f"{key} = ${len(args)}")
    updated = await conn.fetchrow(
        f"UPDATE resources SET {', '.join(sets)} WHERE id = $1 AND version = $2 RETURNING {_COLUMNS}", *args)
    return ResourceRow(**dict(updated)) if updated else None


async def promote(conn: Conn, old_id: int, new_id: int) -> None:
    """A replacement became real: it is now the current row of its name."""
    await conn.execute("UPDATE resources SET is_current = false, version = version + 1 WHERE id = $1", old_id)
    await conn.execute("UPDATE resources SET is_current = true, version = version + 1 WHERE id = $1", new_id)


async def remove(conn: Conn, resource_id: int) -> None:
    await conn.execute("DELETE FROM resources WHERE id = $1", resource_id)


def as_mapping(rows: Iterable[ResourceRow]) -> Mapping[str, ResourceRow]:
    return {r.name: r for r in rows if r.is_current}
