"""The one writer: outcomes of many steps (one included) carried out in one round.

Row writes of the same shape go in one compare-and-set statement; events in one
insert; removed rows in one delete. The caller holds the transaction, and
learns per row what was written (None: the compare-and-set lost, nothing of
that row's outcome was written). A stack user an outcome carries is stored with its row's
write, whose data keeps its secret.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from libs.db import Conn, events, resources, stack_users, stacks
from libs.engine import desired
from libs.engine.status import Action, Status
from libs.telemetry.propagation import Stored
from services.worker import rows
from services.worker.outcome import Outcome


@dataclasses.dataclass(frozen=True)
class Write:
    """One step's outcome on its row, and the event's action, traversal and trace (None: the current one)."""

    stack: stacks.StackRow
    traversal_id: uuid.UUID
    row: resources.ResourceRow
    action: str
    outcome: Outcome
    trace: Stored | None = None


async def write(conn: Conn, writes: Sequence[Write]) -> dict[int, resources.ResourceRow | None]:
    """Carry out ``writes``; by row id, the row as written (as it was, with nothing to write), or None."""
    if any(w.outcome.stack_user is not None for w in writes):
        # A stack user's hash and the data keeping its secret are written together, or neither.
        async with conn.transaction():
            return await _write(conn, writes)
    return await _write(conn, writes)


async def _write(conn: Conn, writes: Sequence[Write]) -> dict[int, resources.ResourceRow | None]:
    out: dict[int, resources.ResourceRow | None] = {}
    shapes: dict[tuple[str, ...], list[tuple[resources.ResourceRow, dict[str, Any]]]] = defaultdict(list)
    for w in writes:
        if w.outcome.changes:
            shapes[tuple(w.outcome.changes)].append((w.row, dict(w.outcome.changes)))
        else:
            out[w.row.id] = w.row
    for batch in shapes.values():
        written = await resources.write_many(conn, batch)
        for row, _ in batch:
            out[row.id] = written.get(row.id)
    new_events = []
    removed = []
    for w in writes:
        fresh = out[w.row.id]
        if fresh is None:
            continue
        for action, state, reason in w.outcome.preceding:
            new_events.append(_event(dataclasses.replace(w, action=action), fresh, state, reason))
        if w.outcome.event is not None:
            state, reason = w.outcome.event
            new_events.append(_event(w, fresh, state, reason))
        if w.outcome.removed:
            removed.append(w.row.id)
        if w.outcome.stack_user is not None:
            await stack_users.put(conn, w.outcome.stack_user, project_id=w.stack.project, stack_id=w.stack.id,
                                  resource_id=w.row.id, resource_name=w.row.name)
    await events.add_many(conn, new_events)
    if removed:
        await resources.remove_many(conn, removed)
    return out


async def with_requires(conn: Conn, stack_id: uuid.UUID, want: desired.Desired | None,
                        writes: Sequence[Write]) -> list[Write]:
    """Resources record the rows they need (the cleanup order of later traversals), as Heat does:
    a create or update under way adds the rows it needs to those it had (a traversal that takes
    over mid-way deletes it before them), one completed needs just those."""
    wanted = want.definition.resources if want is not None else {}
    completing = {i for i, w in enumerate(writes) if w.outcome.finished and "properties" in w.outcome.changes}
    starting = {i for i, w in enumerate(writes) if "action_started" in w.outcome.changes
                and w.outcome.changes.get("action") in (Action.CREATE, Action.UPDATE)
                and w.row.name in wanted}
    if not completing and not starting:
        return list(writes)
    needed: set[str] = set()
    for i in completing | starting:
        if want is not None and writes[i].row.name in wanted:
            needed |= want.definition.required(writes[i].row.name)
    ids: dict[str, int] = {}
    if needed:
        ids = {n: r.id for n, r in (await resources.current_by_names(conn, stack_id, needed)).items()}
    out = []
    for i, w in enumerate(writes):
        if i not in completing and i not in starting:
            out.append(w)
            continue
        names = want.definition.required(w.row.name) if want is not None and w.row.name in wanted else set()
        requires = {ids[n] for n in names if n in ids}
        if i in starting:
            requires |= set(w.row.requires)
        changes = {**w.outcome.changes, "requires": sorted(requires)}
        out.append(dataclasses.replace(w, outcome=dataclasses.replace(w.outcome, changes=changes)))
    return out


def _event(w: Write, row: resources.ResourceRow, state: Status, reason: str) -> events.NewEvent:
    """The event of ``w``'s action, of ``row`` as written, in its item's trace (else the current one)."""
    return events.NewEvent(stack_id=w.stack.id, resource_name=row.name,
                           physical_resource_id=rows.event_physical_id(w.stack.name, row),
                           resource_type=row.type, action=w.action, status=state, reason=reason,
                           traversal_id=w.traversal_id, trace=w.trace if w.trace is not None else Stored.of())
