"""``resources`` rows an update leaves alone, settled in one statement each (the planner's shortcuts)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Sequence
from typing import NamedTuple

from libs.db import Conn
from libs.engine.step import RowState

# A row an update with the desired state ``$2`` it last converged with leaves alone, when no row
# reads another (``requires`` empty): current, complete, and made with that desired state.
_CONVERGED = ("is_current AND status = 'COMPLETE' AND action NOT IN ('INIT', 'DELETE')"
              " AND template_id = $2 AND requires = '{}'")


@dataclasses.dataclass(frozen=True)
class Converged:
    """Whether every row of a stack converged with one desired state (:data:`_CONVERGED`)."""

    rows: int
    converged: int
    types: frozenset[str]

    @property
    def whole(self) -> bool:
        return self.rows == self.converged


async def converged(conn: Conn, stack_id: uuid.UUID, template_id: uuid.UUID) -> Converged:
    """How many of the stack's rows (current or not) :data:`_CONVERGED` holds for, and their types;
    one scan of the stack's rows, none of them sent here."""
    row = await conn.fetchrow(
        f"SELECT count(*) AS rows, count(*) FILTER (WHERE {_CONVERGED}) AS converged,"
        " coalesce(array_agg(DISTINCT type), '{}') AS types FROM resources WHERE stack_id = $1",
        stack_id, template_id)
    assert row is not None
    return Converged(int(row["rows"]), int(row["converged"]), frozenset(row["types"]))


async def touch_converged(conn: Conn, stack_id: uuid.UUID, template_id: uuid.UUID) -> int:
    """Fence the rows :data:`_CONVERGED` against a step of an older traversal still under way, as
    settling them one by one does (``version``); how many it touched. Their ``updated_at`` stays:
    Heat's ``updated_time`` of a resource an update leaves alone does not move. Rows are locked in
    id order, as :func:`resources.write_many` locks them, so a worker's batch cannot deadlock it."""
    status = await conn.execute(
        "UPDATE resources SET version = version + 1 WHERE id IN (SELECT id FROM"
        f" resources WHERE stack_id = $1 AND {_CONVERGED} ORDER BY id FOR UPDATE)", stack_id, template_id)
    return int(status.split()[-1])


async def settle_kept(conn: Conn, stack_id: uuid.UUID, names: Sequence[str], *, old_template_id: uuid.UUID,
                     template_id: uuid.UUID) -> dict[str, int]:
    """The new desired state on the rows ``names`` still complete with the old one, in one statement
    (locked in id order, as :func:`resources.write_many`): name -> id of each row written. A row a step wrote
    meanwhile is left out, to be planned the usual way."""
    rows = await conn.fetch(
        "UPDATE resources SET template_id = $3, version = version + 1 WHERE id IN"
        " (SELECT id FROM resources WHERE stack_id = $1 AND is_current AND template_id = $2"
        " AND status = 'COMPLETE' AND name = ANY($4::text[]) ORDER BY id FOR UPDATE) RETURNING id, name",
        stack_id, old_template_id, template_id, list(names))
    return {r["name"]: r["id"] for r in rows}


class Standing(NamedTuple):
    """What an update's plan needs of a row before it reads any whole (no properties, data or
    attributes): enough to find the rows it leaves alone as written, and its place in the graph.
    A named tuple, not a dataclass: a group's nested stack has 10^6 of them to make."""

    id: int
    name: str
    type: str
    is_current: bool
    action: str
    status: str
    template_id: uuid.UUID | None
    traversal_id: uuid.UUID | None
    requires: Sequence[int]
    replaces: int | None
    deletion_policy: str
    external_id: str | None
    physical_id: str | None

    def state(self) -> RowState:
        """The row as :func:`libs.engine.step.decide` sees it, but for its properties (None)."""
        return RowState(id=self.id, name=self.name, type=self.type, action=self.action, status=self.status,
                        is_current=self.is_current,
                        traversal_id=str(self.traversal_id) if self.traversal_id else None,
                        template_id=str(self.template_id) if self.template_id else None,
                        properties=None, deletion_policy=self.deletion_policy,
                        external_id=self.external_id, physical_id=self.physical_id)


async def standings(conn: Conn, stack_id: uuid.UUID) -> list[Standing]:
    """Every row of the stack as :class:`Standing`, in id order."""
    rows = await conn.fetch(f"SELECT {', '.join(Standing._fields)} FROM resources WHERE stack_id = $1"
                            " ORDER BY id", stack_id)
    return [Standing._make(r) for r in rows]
