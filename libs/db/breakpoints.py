"""Breakpoints set through the api, and the ones that reach a stack from the stacks above it."""

from __future__ import annotations

import uuid
from typing import Any

from libs.db import Conn
from libs.engine.hooks import Breakpoint, Placed


def _breakpoint(row: Any) -> Breakpoint:
    return Breakpoint(id=str(row["id"]), resource=row["resource"], hooks=tuple(row["hooks"]),
                      resource_type=row["resource_type"], timeout_seconds=row["timeout_seconds"],
                      on_timeout=row["on_timeout"])


async def add(conn: Conn, stack_id: uuid.UUID, bp: Breakpoint) -> None:
    await conn.execute(
        "INSERT INTO breakpoints (id, stack_id, resource, hooks, resource_type, timeout_seconds, on_timeout)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7)", uuid.UUID(bp.id), stack_id, bp.resource, list(bp.hooks),
        bp.resource_type, bp.timeout_seconds, bp.on_timeout)


async def for_stack(conn: Conn, stack_id: uuid.UUID) -> list[Breakpoint]:
    rows = await conn.fetch("SELECT * FROM breakpoints WHERE stack_id = $1 ORDER BY created_at, id", stack_id)
    return [_breakpoint(r) for r in rows]


async def remove(conn: Conn, stack_id: uuid.UUID, breakpoint_id: uuid.UUID | None = None) -> int:
    """Remove one breakpoint, or all of the stack's; how many went."""
    result = await conn.execute(
        "DELETE FROM breakpoints WHERE stack_id = $1 AND ($2::uuid IS NULL OR id = $2)",
        stack_id, breakpoint_id)
    return int(result.split()[-1])


async def reaching(conn: Conn, stack_id: uuid.UUID) -> list[Placed]:
    """Breakpoints of this stack and of every stack it is nested in, with the path down to it.

    A breakpoint ``group/0`` set on a parent reaches member ``0`` of the
    group's nested stack: that stack's path from the parent is ``("group",)``.
    """
    rows = await conn.fetch(
        "WITH RECURSIVE up (id, parent_id, prefix) AS ("
        " SELECT id, parent_id, ARRAY[]::text[] FROM stacks WHERE id = $1"
        " UNION ALL"
        " SELECT p.id, p.parent_id, ARRAY[coalesce((SELECT r.name FROM resources r WHERE r.stack_id = p.id"
        "   AND r.physical_id = up.id::text ORDER BY r.is_current DESC LIMIT 1), '')] || up.prefix"
        " FROM up JOIN stacks p ON p.id = up.parent_id)"
        " SELECT b.*, up.prefix FROM up JOIN breakpoints b ON b.stack_id = up.id ORDER BY b.created_at, b.id",
        stack_id)
    return [Placed(_breakpoint(r), tuple(r["prefix"])) for r in rows]
