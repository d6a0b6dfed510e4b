"""``traversals`` and ``traversal_nodes``: the sync points of a traversal.

A node runs when its ``waiting_on`` count reaches 0. Finishing a node marks
it done and decrements its successors in one transaction, once: a redelivered
finish finds the node done and changes nothing.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from libs.db import Conn
from libs.engine.hooks import HookMode
from libs.engine.plan import TraversalGraph
from libs.engine.status import Action

_COLUMNS = ("id, stack_id, action, template_id, remaining, deadline, failed, converge, snapshot_id,"
            " hook_mode, finished_at")


@dataclasses.dataclass(frozen=True)
class TraversalRow:
    id: uuid.UUID
    stack_id: uuid.UUID
    action: Action
    template_id: uuid.UUID | None
    remaining: int
    deadline: datetime.datetime | None
    failed: bool
    converge: bool = False
    # For a RESTORE: the snapshot being restored.
    snapshot_id: uuid.UUID | None = None
    # What its nodes do at hooks.
    hook_mode: HookMode = HookMode.NORMAL
    # Set when its last node finished (a failed one never finishes): its nodes may be gone.
    finished_at: datetime.datetime | None = None


@dataclasses.dataclass(frozen=True)
class NodeRow:
    node: str
    waiting_on: int
    successors: list[str]
    done: bool


async def insert(conn: Conn, *, traversal_id: uuid.UUID, stack_id: uuid.UUID, action: Action,
                 template_id: uuid.UUID | None, graph: TraversalGraph,
                 deadline: datetime.datetime | None, request_id: str, converge: bool = False,
                 snapshot_id: uuid.UUID | None = None, hook_mode: HookMode = HookMode.NORMAL) -> None:
    await conn.execute(
        "INSERT INTO traversals (id, stack_id, action, template_id, remaining, deadline, request_id,"
        " converge, snapshot_id, hook_mode) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)", traversal_id,
        stack_id, action, template_id, len(graph.nodes), deadline, request_id, converge, snapshot_id,
        hook_mode)
    if graph.nodes:
        await conn.copy_records_to_table(
            "traversal_nodes", columns=["traversal_id", "node", "waiting_on", "successors"],
            records=((traversal_id, n.key, n.waiting_on, list(n.successors)) for n in graph.nodes.values()))


def _traversal(record: Any) -> TraversalRow:
    # Written only from these enums (by the planner), so each reads back as a member.
    return TraversalRow(**{**dict(record), "action": Action(record["action"]),
                           "hook_mode": HookMode(record["hook_mode"])})


async def parent_hook_mode(conn: Conn, stack_id: uuid.UUID) -> HookMode:
    """A nested stack steps, or runs free, as the operation of the stack it is nested in does."""
    mode = await conn.fetchval(
        "SELECT t.hook_mode FROM stacks s JOIN stacks p ON p.id = s.parent_id"
        " JOIN traversals t ON t.id = p.current_traversal WHERE s.id = $1 AND p.status = 'IN_PROGRESS'",
        stack_id)
    return HookMode(mode) if mode else HookMode.NORMAL


async def set_hook_mode(conn: Conn, traversal_ids: list[uuid.UUID], mode: HookMode) -> None:
    # In id order, as batches finishing nodes lock traversal rows (see finish_many).
    await conn.execute("UPDATE traversals SET hook_mode = $2 WHERE id IN (SELECT id FROM traversals"
                       " WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE)", traversal_ids, mode)


async def by_request(conn: Conn, stack_id: uuid.UUID, request_id: str) -> uuid.UUID | None:
    value = await conn.fetchval("SELECT id FROM traversals WHERE stack_id = $1 AND request_id = $2",
                                stack_id, request_id)
    return value if isinstance(value, uuid.UUID) else None


async def ready_nodes(conn: Conn, traversal_id: uuid.UUID) -> list[str]:
    rows = await conn.fetch("SELECT node FROM traversal_nodes WHERE traversal_id = $1 AND waiting_on = 0"
                            " AND NOT done", traversal_id)
    return [r["node"] for r in rows]


async def get_many(conn: Conn, ids: list[uuid.UUID]) -> dict[uuid.UUID, TraversalRow]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM traversals WHERE id = ANY($1::uuid[])", ids)
    return {r["id"]: _traversal(r) for r in rows}


async def nodes(conn: Conn, traversal_id: uuid.UUID, keys: list[str]) -> dict[str, NodeRow]:
    rows = await conn.fetch("SELECT node, waiting_on, successors, done FROM traversal_nodes"
                            " WHERE traversal_id = $1 AND node = ANY($2::text[])", traversal_id, keys)
    return {r["node"]: NodeRow(**dict(r)) for r in rows}


async def get(conn: Conn, traversal_id: uuid.UUID) -> TraversalRow | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM traversals WHERE id = $1", traversal_id)
    return _traversal(row) if row else None


async def node(conn: Conn, traversal_id: uuid.UUID, key: str) -> NodeRow | None:
    row = await conn.fetchrow("SELECT node, waiting_on, successors, done FROM traversal_nodes"
                              " WHERE traversal_id = $1 AND node = $2", traversal_id, key)
    return NodeRow(**dict(row)) if row else None


# What finishing nodes did: (those finished now, successors now ready, nodes left in the traversal).
Finished = tuple[list[str], list[str], int]


async def finish_node(conn: Conn, traversal_id: uuid.UUID, key: str) -> tuple[list[str], int] | None:
    """Mark done, release successors; (successors now ready, nodes left), or None if already done.

    Call inside a transaction together with the state write of the step.
    """
    finished, ready, remaining = await finish_nodes(conn, traversal_id, [key])
    if not finished:
        return None
    return ready, remaining


async def finish_nodes(conn: Conn, traversal_id: uuid.UUID, keys: list[str]) -> Finished:
    """:func:`finish_node` for many nodes: (those finished now, successors now ready, nodes left).

    Nodes already done are left out of the first list and change nothing.

    Every row this writes (the nodes and their successors) is locked first, in
    one statement and in key order, so two transactions finishing overlapping
    sets in any order wait for each other instead of deadlocking (issue 14: 54
    deadlocks in 3 minutes when each UPDATE locked rows in the order it met
    them). The traversal's counter row is written last, to hold its lock
    briefly. To finish nodes of several traversals in one transaction, use
    :func:`finish_many`, which takes them in one order too.
    """
    await conn.execute(
        "SELECT 1 FROM traversal_nodes WHERE traversal_id = $1 AND node = ANY($2::text[] || ARRAY("
        "  SELECT unnest(successors) FROM traversal_nodes"
        "  WHERE traversal_id = $1 AND node = ANY($2::text[]))) ORDER BY node FOR UPDATE", traversal_id, keys)
    done = await conn.fetch(
        "UPDATE traversal_nodes SET done = true WHERE traversal_id = $1 AND node = ANY($2::text[])"
        " AND NOT done RETURNING node, successors", traversal_id, keys)
    if not done:
        return [], [], -1
    released: list[str] = [s for r in done for s in r["successors"]]
    ready: list[str] = []
    if released:
        rows = await conn.fetch(
            "UPDATE traversal_nodes t SET waiting_on = t.waiting_on - d.n"
            " FROM (SELECT s, count(*)::int AS n FROM unnest($2::text[]) AS s GROUP BY s) d"
            " WHERE t.traversal_id = $1 AND t.node = d.s RETURNING t.node, t.waiting_on",
            traversal_id, released)
        ready = [r["node"] for r in rows if r["waiting_on"] == 0]
    remaining = await conn.fetchval(
        "UPDATE traversals SET remaining = remaining - $2 WHERE id = $1 RETURNING remaining",
        traversal_id, len(done))
    return [r["node"] for r in done], ready, int(remaining)


async def finish_many(conn: Conn, keys: Mapping[uuid.UUID, list[str]]) -> dict[uuid.UUID, Finished]:
    """:func:`finish_nodes` for several traversals in the caller's transaction, in traversal id
    order: in any other, two workers' batches holding one traversal's rows each and waiting for
    the other's would deadlock."""
    return {traversal_id: await finish_nodes(conn, traversal_id, keys[traversal_id])
            for traversal_id in sorted(keys, key=lambda t: t.bytes) if keys[traversal_id]}


async def ready_successors(conn: Conn, traversal_id: uuid.UUID, key: str) -> list[str]:
    """For a node already done: successors that are ready and not done (to publish again)."""
    rows = await conn.fetch(
        "SELECT s.node FROM traversal_nodes n JOIN traversal_nodes s ON s.traversal_id = n.traversal_id"
        " AND s.node = ANY(n.successors) WHERE n.traversal_id = $1 AND n.node = $2"
        " AND s.waiting_on = 0 AND NOT s.done", traversal_id, key)
    return [r["node"] for r in rows]


async def mark_failed(conn: Conn, traversal_id: uuid.UUID) -> bool:
    """The first failure of a traversal wins (it decides rollback); later ones see False."""
    result = await conn.execute("UPDATE traversals SET failed = true WHERE id = $1 AND NOT failed",
                                traversal_id)
    return result.endswith(" 1")


async def close(conn: Conn, traversal_id: uuid.UUID) -> None:
    await conn.execute("UPDATE traversals SET finished_at = now() WHERE id = $1", traversal_id)


async def forget_finished_nodes(conn: Conn, *, batch: int, older_than: float) -> int | None:
    """Delete up to ``batch`` nodes of the oldest traversal finished ``older_than`` seconds ago
    or more whose nodes are not yet forgotten (marked so once none is left); how many went, or
    None when no traversal is left to sweep. Call inside a transaction."""
    traversal_id = await conn.fetchval(
        "SELECT id FROM traversals WHERE finished_at < now() - make_interval(secs => $1)"
        " AND NOT nodes_forgotten ORDER BY finished_at LIMIT 1 FOR UPDATE SKIP LOCKED", older_than)
    if traversal_id is None:
        return None
    status = await conn.execute(
        "DELETE FROM traversal_nodes WHERE traversal_id = $1 AND node IN (SELECT node FROM traversal_nodes"
        " WHERE traversal_id = $1 LIMIT $2)", traversal_id, batch)
    gone = int(status.split()[-1])
    if gone < batch:
        await conn.execute("UPDATE traversals SET nodes_forgotten = true WHERE id = $1", traversal_id)
    return gone
