"""``resources``: one row per physical incarnation; every write fenced by ``version``."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

import orjson

from libs.db import Conn
from libs.db.filters import Where
from libs.engine.status import Action
from libs.engine.step import RowState

_COLUMNS = ("id, stack_id, name, type, is_current, physical_id, action, status, status_reason,"
            " template_id, traversal_id, action_started, properties, reference, attributes, data,"
            " requires, replaces, deletion_policy, version, created_at, updated_at, external_id")


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
    external_id: str | None = None

    def known_reference(self) -> Any:
        """What ``get_resource`` gives of it: the reference its last completed action recorded,
        else (never completed) its physical id or, with none, its name, as Heat's reference."""
        if self.reference is not None:
            return self.reference
        return self.physical_id or self.name

    def state(self) -> RowState:
        """What :func:`libs.engine.step.decide` needs to know of this row."""
        return RowState(id=self.id, name=self.name, type=self.type, action=self.action, status=self.status,
                        is_current=self.is_current,
                        traversal_id=str(self.traversal_id) if self.traversal_id else None,
                        template_id=str(self.template_id) if self.template_id else None,
                        properties=self.properties, deletion_policy=self.deletion_policy,
                        external_id=self.external_id, physical_id=self.physical_id)


def required_by(rows: Iterable[ResourceRow]) -> dict[int, list[str]]:
    """Row id -> names of the current resources that need it."""
    out: dict[int, list[str]] = {}
    for row in rows:
        if row.is_current:
            for needed in row.requires:
                out.setdefault(needed, []).append(row.name)
    return out


class Replacing(Protocol):
    """What :func:`unmade_replacements` reads of a row (a whole row or an outline of it)."""

    @property
    def id(self) -> int: ...
    @property
    def replaces(self) -> int | None: ...
    @property
    def is_current(self) -> bool: ...
    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...


class Outlined(Replacing, Protocol):
    """A row whole, or its :class:`~libs.db.settling.Standing`: what an update's plan reads of
    every row before it reads any whole."""

    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def requires(self) -> Sequence[int]: ...
    @property
    def template_id(self) -> uuid.UUID | None: ...

    def state(self) -> RowState: ...


_R = TypeVar("_R", bound=Replacing)


def unmade_replacements(rows: Iterable[_R]) -> dict[int, _R]:
    """Row id -> its newest replacement never made current whose create started (failed, or under
    way); :func:`unmade_replacement` asks the database the same of one row."""
    out: dict[int, _R] = {}
    for row in rows:
        if row.replaces is not None and not row.is_current and row.action == Action.CREATE and (
                row.replaces not in out or out[row.replaces].id < row.id):
            out[row.replaces] = row
    return out


async def unmade_replacement(conn: Conn, resource_id: int) -> ResourceRow | None:
    """:func:`unmade_replacements` of the one row ``resource_id``."""
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM resources WHERE replaces = $1 AND NOT is_current"
                              " AND action = $2 ORDER BY id DESC LIMIT 1", resource_id, Action.CREATE)
    return ResourceRow(**dict(row)) if row else None


async def for_stack(conn: Conn, stack_id: uuid.UUID) -> list[ResourceRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 ORDER BY id", stack_id)
    return [ResourceRow(**dict(r)) for r in rows]


@dataclasses.dataclass(frozen=True)
class Outline:
    """What a delete's plan needs of a row: its place in the graph, and whether it was ever made."""

    id: int
    name: str
    is_current: bool
    requires: tuple[int, ...]
    # Never started: no physical resource, no data, not an external one (nothing to delete).
    never_made: bool


async def outlines(conn: Conn, stack_id: uuid.UUID) -> list[Outline]:
    """Every row of the stack as :class:`Outline`, in id order: a delete of 10^6 members reads
    these rather than whole rows (their properties, attributes and data)."""
    rows = await conn.fetch(
        "SELECT id, name, is_current, requires, action = $2 AND physical_id IS NULL AND data = '{}'::jsonb"
        " AND external_id IS NULL AS never_made FROM resources WHERE stack_id = $1 ORDER BY id",
        stack_id, Action.INIT)
    return [Outline(r["id"], r["name"], r["is_current"], tuple(r["requires"]), r["never_made"]) for r in rows]


# Heat's resource list filters -> what each compares (``status`` matches either half, as Heat's).
FILTER_COLUMNS = {"type": "type", "name": "name", "action": "action", "id": "id::text",
                  "physical_resource_id": "coalesce(physical_id, '')"}


@dataclasses.dataclass(frozen=True)
class ResourceQuery:
    """``GET .../resources`` of one stack: Heat's filters, and Ember's paging, which Heat's list lacks.

    Unpaged, the rows come in the order they were made, as they always have; ``paged``, in name
    order after the resource named ``after``, so that a page costs an index range of ``limit``
    entries whatever the stack's size.
    """

    stack_id: uuid.UUID
    filters: Mapping[str, Sequence[str]] = dataclasses.field(default_factory=dict)
    paged: bool = False
    after: str | None = None
    limit: int | None = None


async def listing(conn: Conn, query: ResourceQuery) -> list[ResourceRow]:
    """The stack's current resources that pass the query's filters (``status``, or a FILTER_COLUMNS key)."""
    where = Where()
    where.add(f"stack_id = {where.param(query.stack_id)} AND is_current")
    for key, values in query.filters.items():
        if key == "status":
            where.status_any_of(list(values))
        else:
            where.any_of(FILTER_COLUMNS[key], list(values))
    if query.after is not None:
        where.add(f"name > {where.param(query.after)}")
    sql = f"SELECT {_COLUMNS} FROM resources WHERE {where.sql()} ORDER BY {'name' if query.paged else 'id'}"
    if query.limit is not None:
        sql += f" LIMIT {where.param(query.limit)}"
    return [ResourceRow(**dict(r)) for r in await conn.fetch(sql, *where.args)]


async def needed_by(conn: Conn, stack_id: uuid.UUID, ids: Collection[int]) -> dict[int, list[str]]:
    """:func:`required_by` for the rows ``ids`` only: the rows that need them, found by index
    (``resources_requires_idx``) rather than by reading every row of the stack."""
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 AND is_current"
                            " AND requires <> '{}' AND requires && $2::bigint[]", stack_id, list(ids))
    wanted = set(ids)
    return {k: v for k, v in required_by(ResourceRow(**dict(r)) for r in rows).items() if k in wanted}


async def current_by_physical_id(conn: Conn, stack_id: uuid.UUID, physical_id: str) -> ResourceRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 AND is_current"
                              " AND physical_id = $2 ORDER BY id LIMIT 1", stack_id, physical_id)
    return ResourceRow(**dict(row)) if row else None


async def get(conn: Conn, resource_id: int) -> ResourceRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM resources WHERE id = $1", resource_id)
    return ResourceRow(**dict(row)) if row else None


async def get_many(conn: Conn, ids: Iterable[int]) -> dict[int, ResourceRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE id = ANY($1::bigint[])", list(ids))
    return {r["id"]: ResourceRow(**dict(r)) for r in rows}


async def replacements(conn: Conn, ids: Iterable[int], traversal_id: uuid.UUID) -> dict[int, int]:
    """For each row id, the newest replacement of it that ``traversal_id`` started."""
    rows = await conn.fetch(
        "SELECT replaces, max(id) AS id FROM resources WHERE replaces = ANY($1::bigint[])"
        " AND traversal_id = $2 GROUP BY replaces", list(ids), traversal_id)
    return {r["replaces"]: r["id"] for r in rows}


async def current_by_names(conn: Conn, stack_id: uuid.UUID, names: Iterable[str]) -> dict[str, ResourceRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM resources WHERE stack_id = $1 AND is_current"
                            " AND name = ANY($2::text[])", stack_id, list(names))
    return {r["name"]: ResourceRow(**dict(r)) for r in rows}


async def nested_read(conn: Conn, stack_id: uuid.UUID, names: Iterable[str], *, every: bool = False,
                      attributes: Iterable[str] = ()) -> dict[str, tuple[Any, dict[str, Any]]]:
    """What a nesting resource reads of its nested stack ``stack_id``: name -> (reference, attributes).

    ``names``: those current rows, with every attribute they keep. ``every``: every
    current row too (in id order), in one query of its reference and only the
    ``attributes`` named (none: an empty map), so a group of 10^5 members reads its
    members' references without their attributes and its members' data.
    """
    found = {name: (row.known_reference(), row.attributes)
             for name, row in (await current_by_names(conn, stack_id, names)).items()} if names else {}
    if not every:
        return found
    wanted = list(attributes)
    rows = await conn.fetch(
        "SELECT name, coalesce(reference, to_jsonb(coalesce(physical_id, name))) AS reference,"
        " CASE WHEN cardinality($2::text[]) = 0 THEN NULL ELSE (SELECT json_object_agg(key, value)"
        " FROM json_each(attributes) WHERE key = ANY($2::text[])) END AS attributes"
        " FROM resources WHERE stack_id = $1 AND is_current ORDER BY id", stack_id, wanted)
    every_row = {r["name"]: (r["reference"], dict(r["attributes"] or {})) for r in rows}
    return {**every_row, **found}


async def data_of_reference(conn: Conn, stack_id: uuid.UUID, reference: str) -> dict[str, Any] | None:
    """The data of the current resource that ``get_resource`` would give as ``reference`` (or so named)."""
    value = await conn.fetchval(
        "SELECT data FROM resources WHERE stack_id = $1 AND is_current"
        " AND (reference = to_jsonb($2::text) OR name = $2) ORDER BY (name = $2) LIMIT 1",
        stack_id, reference)
    return dict(value) if isinstance(value, dict) else None


async def insert_new(conn: Conn, stack_id: uuid.UUID, items: Iterable[tuple[str, str]]) -> dict[str, int]:
    """Rows for resources new to the stack (INIT); returns name -> id."""
    pairs = list(items)
    names = [n for n, _ in pairs]
    types = [t for _, t in pairs]
    rows = await conn.fetch(
        "INSERT INTO resources (stack_id, name, type) SELECT $1, n, t FROM unnest($2::text[], $3::text[])"
        " AS x(n, t) RETURNING id, name", stack_id, names, types)
    return {r["name"]: r["id"] for r in rows}


async def set_data(conn: Conn, resource_id: int, data: Mapping[str, Any]) -> None:
    """The data of a row no step holds yet (a replacement just made), unfenced."""
    await conn.execute("UPDATE resources SET data = $2 WHERE id = $1", resource_id, data)


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


# Column types for the array parameters of :func:`write_many`; JSON travels as
# text (asyncpg's codec does not reach array elements) and arrays as literals.
_TYPES = {"action": "text", "status": "text", "status_reason": "text", "physical_id": "text",
          "template_id": "uuid", "traversal_id": "uuid", "action_started": "timestamptz",
          "properties": "json", "reference": "jsonb", "attributes": "json", "data": "jsonb",
          "requires": "bigint[]", "deletion_policy": "text", "is_current": "boolean", "external_id": "text",
          "type": "text"}


def _param(column: str, value: Any) -> Any:
    kind = _TYPES[column]
    if kind in ("json", "jsonb"):
        return None if value is None else orjson.dumps(value).decode()
    if kind == "bigint[]":
        return "{" + ",".join(str(int(v)) for v in value) + "}"
    return value


async def write_many(conn: Conn, writes: Sequence[tuple[ResourceRow, Mapping[str, Any]]], *,
                     touch: bool = True) -> dict[int, ResourceRow]:
    """:func:`write` for many rows in one statement; every change set names the same columns.

    ``touch=False`` leaves ``updated_at`` (Heat's ``updated_time``) as it is: the planner
    recording a new desired state on rows an update leaves alone, which Heat does not date.

    Returns the rows written, by id; a row missing from the answer lost its
    compare-and-set, exactly as :func:`write` returning None.
    """
    if not writes:
        return {}
    columns = list(writes[0][1])
    if any(list(changes) != columns for _, changes in writes):
        raise ValueError("write_many: every change set must name the same columns")
    args: list[Any] = [[row.id for row, _ in writes], [row.version for row, _ in writes]]
    selects = ["unnest($1::bigint[]) AS id", "unnest($2::bigint[]) AS version"]
    sets = ["version = r.version + 1", *(["updated_at = now()"] if touch else [])]
    for i, column in enumerate(columns):
        kind = _TYPES[column]
        carrier = "text" if kind in ("json", "jsonb", "bigint[]") else kind
        args.append([_param(column, changes[column]) for _, changes in writes])
        selects.append(f"unnest(${i + 3}::{carrier}[]) AS c{i}")
        sets.append(f"{column} = x.c{i}" + (f"::{kind}" if carrier != kind else ""))
    returning = ", ".join(f"r.{c.strip()}" for c in _COLUMNS.split(","))
    if len(writes) > 1:
        # The UPDATE would lock rows in whatever order its plan meets them; a planner settling
        # unchanged rows and a worker's batch writing some of them could then deadlock.
        await conn.execute("SELECT 1 FROM resources WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
                           args[0])
    rows = await conn.fetch(
        f"UPDATE resources r SET {', '.join(sets)} FROM (SELECT {', '.join(selects)}) x"
        f" WHERE r.id = x.id AND r.version = x.version RETURNING {returning}", *args)
    return {r["id"]: ResourceRow(**dict(r)) for r in rows}


async def remove_many(conn: Conn, ids: Iterable[int]) -> None:
    await conn.execute("DELETE FROM resources WHERE id IN (SELECT id FROM resources"
                       " WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE)", list(ids))


async def promote(conn: Conn, old_id: int, new_id: int) -> None:
    """A replacement became real: it is now the current row of its name."""
    await conn.execute("UPDATE resources SET is_current = false, version = version + 1 WHERE id = $1", old_id)
    await conn.execute("UPDATE resources SET is_current = true, version = version + 1 WHERE id = $1", new_id)


async def remove(conn: Conn, resource_id: int) -> None:
    await conn.execute("DELETE FROM resources WHERE id = $1", resource_id)


async def give_back(conn: Conn, resource_id: int, data: dict[str, Any], *, adopt: bool,
                    physical_id: str | None) -> None:
    """A restored row gets its data back; an adopted one also takes over ``physical_id``."""
    await conn.execute("UPDATE resources SET data = $2, physical_id = CASE WHEN $3 THEN $4"
                       " ELSE physical_id END WHERE id = $1", resource_id, data, adopt, physical_id)


async def retain_all(conn: Conn, stack_id: uuid.UUID) -> None:
    """Every row of the stack ``Retain``ed: its cleanup forgets the row and never calls the cloud."""
    await conn.execute("UPDATE resources SET deletion_policy = 'Retain', version = version + 1"
                       " WHERE stack_id = $1", stack_id)


def as_mapping(rows: Iterable[ResourceRow]) -> Mapping[str, ResourceRow]:
    return {r.name: r for r in rows if r.is_current}


async def nesting_name(conn: Conn, parent_id: uuid.UUID | None, stack_id: uuid.UUID) -> str | None:
    """The name of the resource of stack ``parent_id`` whose nested stack is ``stack_id`` (None at the top).

    Heat shows it as ``parent_resource`` on every resource of a nested stack.
    """
    if parent_id is None:
        return None
    found = await conn.fetchval("SELECT name FROM resources WHERE stack_id = $1 AND physical_id = $2"
                                " ORDER BY is_current DESC, id DESC LIMIT 1", parent_id, str(stack_id))
    return str(found) if found is not None else None


async def owners(conn: Conn, stack_ids: Sequence[uuid.UUID], physical_ids: Sequence[str]) -> dict[str, str]:
    """The current resources of ``stack_ids`` whose physical id is one of ``physical_ids``: name by id."""
    rows = await conn.fetch("SELECT physical_id, name FROM resources WHERE stack_id = ANY($1::uuid[])"
                            " AND is_current AND physical_id = ANY($2::text[])", list(stack_ids),
                            list(physical_ids))
    return {r["physical_id"]: r["name"] for r in rows}


async def current_count(conn: Conn, stack_id: uuid.UUID) -> int:
    return int(await conn.fetchval(
        "SELECT count(*) FROM resources WHERE stack_id = $1 AND is_current", stack_id))


async def accept_properties(conn: Conn, resource_id: int, version: int,
                            properties: Mapping[str, Any]) -> bool:
    """The row's applied properties are now ``properties`` (what the cloud has), fenced by ``version``."""
    status = await conn.execute(
        "UPDATE resources SET properties = $3, version = version + 1, updated_at = now()"
        " WHERE id = $1 AND version = $2", resource_id, version, dict(properties))
    return status.endswith(" 1")
