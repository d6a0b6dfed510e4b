"""``stacks``: one row per stack, with its desired state and current traversal."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Collection
from typing import Any

from libs.db import Conn, subscriptions
from libs.db.filters import Where
from libs.engine.status import Action, Status

_COLUMNS = ("id, name, project, action, status, status_reason, template_id, prev_template_id,"
            " current_traversal, disable_rollback, timeout_mins, tags, parent_id, nested_depth,"
            " outputs, created_at, updated_at, deleted_at")


@dataclasses.dataclass(frozen=True)
class StackRow:
    id: uuid.UUID
    name: str
    project: str
    action: str
    status: str
    status_reason: str
    template_id: uuid.UUID | None
    prev_template_id: uuid.UUID | None
    current_traversal: uuid.UUID | None
    disable_rollback: bool
    timeout_mins: int | None
    tags: list[str]
    parent_id: uuid.UUID | None
    nested_depth: int
    outputs: Any
    created_at: datetime.datetime
    updated_at: datetime.datetime | None
    deleted_at: datetime.datetime | None

    @property
    def stack_status(self) -> str:
        return f"{self.action}_{self.status}"


async def insert(conn: Conn, *, stack_id: uuid.UUID, name: str, project: str, template_id: uuid.UUID,
                 disable_rollback: bool, timeout_mins: int | None, tags: list[str],
                 parent_id: uuid.UUID | None = None, nested_depth: int = 0) -> StackRow:
    """A new stack at its first desired state, its ``event_sinks`` made its subscriptions."""
    row = await conn.fetchrow(
        f"INSERT INTO stacks (id, name, project, action, status, template_id, disable_rollback,"
        f" timeout_mins, tags, parent_id, nested_depth)"
        f" VALUES ($1, $2, $3, 'CREATE', 'IN_PROGRESS', $4, $5, $6, $7, $8, $9) RETURNING {_COLUMNS}",
        stack_id, name, project, template_id, disable_rollback, timeout_mins, tags, parent_id,
        nested_depth)
    assert row is not None
    await subscriptions.follow_environment(conn, stack_id, project, template_id)
    return StackRow(**dict(row))


async def get(conn: Conn, stack_id: uuid.UUID, *, for_update: bool = False) -> StackRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM stacks WHERE id = $1"
                              + (" FOR UPDATE" if for_update else ""), stack_id)
    return StackRow(**dict(row)) if row else None


async def get_many(conn: Conn, ids: list[uuid.UUID]) -> dict[uuid.UUID, StackRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM stacks WHERE id = ANY($1::uuid[])", ids)
    return {r["id"]: StackRow(**dict(r)) for r in rows}


async def by_name(conn: Conn, project: str, name: str) -> StackRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM stacks WHERE project = $1 AND name = $2"
                              " AND deleted_at IS NULL", project, name)
    return StackRow(**dict(row)) if row else None


async def set_desired(conn: Conn, stack_id: uuid.UUID, *, action: Action, template_id: uuid.UUID | None,
                      reason: str = "", **fields: Any) -> None:
    """Point the stack at a new desired state; the planner picks it up from here.

    The desired state's ``event_sinks`` become the stack's subscriptions in the caller's
    transaction (as at :func:`insert`): they commit together, before any of its events.
    """
    sets = ["action = $2", "status = 'IN_PROGRESS'", "status_reason = $3", "template_id = $4",
            "updated_at = now()"]
    args: list[Any] = [stack_id, action, reason, template_id]
    for key, value in fields.items():
        args.append(value)
        sets.append(f"{key} = ${len(args)}")
    project = await conn.fetchval(f"UPDATE stacks SET {', '.join(sets)} WHERE id = $1 RETURNING project",
                                  *args)
    if template_id is not None and project is not None:
        await subscriptions.follow_environment(conn, stack_id, project, template_id)


async def stop_running(conn: Conn, stack_id: uuid.UUID, actions: Collection[Action] | None = None
                       ) -> tuple[str, str, uuid.UUID] | None:
    """Make no traversal current if one of ``actions`` (any, if None) runs; its (name, action, id).

    A stack whose action is not planned yet has nothing running to stop.

    The row stays locked to the caller's transaction, so no step settles the
    stopped traversal meanwhile.
    """
    row = await conn.fetchrow("SELECT name, action, current_traversal FROM stacks WHERE id = $1"
                              " AND status = 'IN_PROGRESS' AND current_traversal IS NOT NULL"
                              " AND deleted_at IS NULL FOR UPDATE", stack_id)
    if row is None or (actions is not None and row["action"] not in actions):
        return None
    await conn.execute("UPDATE stacks SET current_traversal = NULL WHERE id = $1", stack_id)
    return row["name"], row["action"], row["current_traversal"]


async def begin_traversal(conn: Conn, stack_id: uuid.UUID, traversal_id: uuid.UUID, action: Action,
                          reason: str) -> None:
    await conn.execute(
        "UPDATE stacks SET current_traversal = $2, action = $3, status = 'IN_PROGRESS',"
        " status_reason = $4, updated_at = now() WHERE id = $1", stack_id, traversal_id, action, reason)


async def settle(conn: Conn, stack_id: uuid.UUID, traversal_id: uuid.UUID, *, status: Status, reason: str,
                 outputs: Any = None, completed_template: bool = False, deleted: bool = False) -> bool:
    """Mark the traversal's end on the stack, only if it is still the current one (fencing)."""
    result = await conn.execute(
        "UPDATE stacks SET status = $3, status_reason = $4, outputs = COALESCE($5, outputs),"
        " prev_template_id = CASE WHEN $6 THEN template_id ELSE prev_template_id END,"
        " deleted_at = CASE WHEN $7 THEN now() ELSE deleted_at END, updated_at = now()"
        " WHERE id = $1 AND current_traversal = $2", stack_id, traversal_id, status, reason, outputs,
        completed_template, deleted)
    return result.endswith(" 1")


async def mark_adopting(conn: Conn, stack_id: uuid.UUID, adopt_data: dict[str, Any]) -> None:
    """A new stack is an adopt: its action is ``ADOPT`` and it keeps the data it adopts."""
    await conn.execute("UPDATE stacks SET action = 'ADOPT', adopt_data = $2 WHERE id = $1",
                       stack_id, adopt_data)


async def adopt_data(conn: Conn, stack_id: uuid.UUID) -> dict[str, Any] | None:
    """The abandon data an adopted stack was made from (None for any other stack)."""
    data = await conn.fetchval("SELECT adopt_data FROM stacks WHERE id = $1", stack_id)
    return data if isinstance(data, dict) else None


async def fail_in_place(conn: Conn, stack_id: uuid.UUID, reason: str) -> None:
    """FAILED with ``reason``, and a fresh traversal with no nodes made current.

    In-flight steps of the old traversal finish their resource and stop propagating.
    """
    await conn.execute("UPDATE stacks SET current_traversal = $2, status = 'FAILED',"
                       " status_reason = $3, updated_at = now() WHERE id = $1",
                       stack_id, uuid.uuid4(), reason)


async def set_state(conn: Conn, stack_id: uuid.UUID, *, action: Action, status: Status, reason: str) -> None:
    """An action done at once, with no traversal (a snapshot): the stack's state and reason."""
    await conn.execute("UPDATE stacks SET action = $2, status = $3, status_reason = $4, updated_at = now()"
                       " WHERE id = $1", stack_id, action, status, reason)


async def set_outputs(conn: Conn, stack_id: uuid.UUID, outputs: Any) -> None:
    await conn.execute("UPDATE stacks SET outputs = $2 WHERE id = $1", stack_id, outputs)


@dataclasses.dataclass(frozen=True)
class ListQuery:
    """``GET /stacks``: Heat's filters, sorting and marker paging, for one project."""

    project: str | None  # None: every project (an admin's global_tenant)
    limit: int | None = None
    marker: uuid.UUID | None = None
    sort_key: str = "created_at"
    sort_desc: bool = True
    filters: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    show_deleted: bool = False
    show_nested: bool = False
    tags: list[str] = dataclasses.field(default_factory=list)
    tags_any: list[str] = dataclasses.field(default_factory=list)
    not_tags: list[str] = dataclasses.field(default_factory=list)
    not_tags_any: list[str] = dataclasses.field(default_factory=list)


# API sort keys and filter names -> columns (Heat's names on the left).
SORT_COLUMNS = {"stack_name": "name", "name": "name", "stack_status": "status", "status": "status",
                "creation_time": "created_at", "created_at": "created_at",
                "updated_time": "updated_at", "updated_at": "updated_at"}
FILTER_COLUMNS = {"id": "id::text", "name": "name", "stack_name": "name", "status": "status",
                  "action": "action", "owner_id": "parent_id::text", "tenant": "project"}


def _where(query: ListQuery) -> Where:
    where = Where()
    project = where.param(query.project)
    where.add(f"({project}::text IS NULL OR project = {project})")
    if not query.show_deleted:
        where.add("deleted_at IS NULL")
    if not query.show_nested and "owner_id" not in query.filters:
        where.add("parent_id IS NULL")
    for key, values in query.filters.items():
        if key == "status":
            where.status_any_of(values)
        else:
            where.any_of(FILTER_COLUMNS[key], values)
    if query.tags:
        where.add(f"tags @> {where.param(query.tags)}::text[]")
    if query.tags_any:
        where.add(f"tags && {where.param(query.tags_any)}::text[]")
    if query.not_tags:
        where.add(f"NOT (tags @> {where.param(query.not_tags)}::text[])")
    if query.not_tags_any:
        where.add(f"NOT (tags && {where.param(query.not_tags_any)}::text[])")
    return where


async def list_stacks(conn: Conn, query: ListQuery) -> list[StackRow]:
    where = _where(query)
    column = SORT_COLUMNS.get(query.sort_key, "created_at")
    direction = "DESC" if query.sort_desc else "ASC"
    if query.marker is not None:
        # Keyset paging after the marker row, in the same order (id breaks ties).
        op = "<" if query.sort_desc else ">"
        marker = where.param(query.marker)
        where.add(f"({column}, id) {op} (SELECT {column}, id FROM stacks WHERE id = {marker})")
    sql = (f"SELECT {_COLUMNS} FROM stacks WHERE {where.sql()}"
           f" ORDER BY {column} {direction} NULLS LAST, id {direction}")
    if query.limit is not None:
        sql += f" LIMIT {where.param(query.limit)}"
    return [StackRow(**dict(r)) for r in await conn.fetch(sql, *where.args)]


async def count_stacks(conn: Conn, query: ListQuery) -> int:
    where = _where(query)
    return int(await conn.fetchval(f"SELECT count(*) FROM stacks WHERE {where.sql()}", *where.args))


async def identify(conn: Conn, project: str, name_or_id: str) -> StackRow | None:
    """Heat's ``identify_stack``: a UUID finds deleted stacks too; a name only live ones."""
    try:
        stack_id = uuid.UUID(name_or_id)
    except ValueError:
        return await by_name(conn, project, name_or_id)
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM stacks WHERE id = $1 AND project = $2",
                              stack_id, project)
    if row is not None:
        return StackRow(**dict(row))
    return await by_name(conn, project, name_or_id)


async def children(conn: Conn, parent_id: uuid.UUID, among: Collection[uuid.UUID] | None = None
                   ) -> dict[uuid.UUID, str]:
    """The nested stacks of a stack (deleted ones too), or those of them ``among`` names: id -> name."""
    if among is None:
        rows = await conn.fetch("SELECT id, name FROM stacks WHERE parent_id = $1", parent_id)
    else:
        rows = await conn.fetch("SELECT id, name FROM stacks WHERE parent_id = $1 AND id = ANY($2::uuid[])",
                                parent_id, list(among))
    return {r["id"]: r["name"] for r in rows}


async def nested_tree(conn: Conn, stack_id: uuid.UUID, depth: int) -> list[StackRow]:
    """Stacks nested in this one down to ``depth`` levels (deleted ones too), parents first, in a
    stable order (a paged resource list goes through them in it)."""
    if depth <= 0:
        return []
    rows = await conn.fetch(
        f"WITH RECURSIVE tree AS (SELECT s.*, 1 AS level FROM stacks s WHERE parent_id = $1"
        f" UNION ALL SELECT c.*, t.level + 1 FROM stacks c JOIN tree t ON c.parent_id = t.id"
        f" WHERE t.level < $2) SELECT {_COLUMNS} FROM tree ORDER BY level, created_at, id", stack_id, depth)
    return [StackRow(**dict(r)) for r in rows]


async def lineage(conn: Conn, stack_id: uuid.UUID, *, depth: int = 64) -> list[uuid.UUID]:
    """The stack and those it is nested in, innermost first (nothing if it does not exist)."""
    rows = await conn.fetch(
        "WITH RECURSIVE up AS (SELECT id, parent_id, 1 AS level FROM stacks WHERE id = $1"
        " UNION ALL SELECT s.id, s.parent_id, up.level + 1 FROM stacks s JOIN up ON s.id = up.parent_id"
        " WHERE up.level < $2) SELECT id FROM up ORDER BY level", stack_id, depth)
    return [r["id"] for r in rows]


async def tree_resource_count(conn: Conn, stack_id: uuid.UUID) -> int:
    """The current resources of the whole tree ``stack_id`` is in, from its root down (Heat's
    ``total_resources`` of the root stack)."""
    count = await conn.fetchval(
        "WITH RECURSIVE up AS (SELECT id, parent_id FROM stacks WHERE id = $1"
        " UNION ALL SELECT s.id, s.parent_id FROM stacks s JOIN up ON s.id = up.parent_id),"
        " tree AS (SELECT id FROM up WHERE parent_id IS NULL"
        " UNION ALL SELECT s.id FROM stacks s JOIN tree t ON s.parent_id = t.id WHERE s.deleted_at IS NULL)"
        " SELECT count(*) FROM resources r JOIN tree t ON r.stack_id = t.id WHERE r.is_current", stack_id)
    return int(count)
