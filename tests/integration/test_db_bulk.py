"""The batched row helpers the worker's common path uses, against the real server."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from libs.db import Conn, events, locks, resources, stacks, templates, traversals
from libs.db.pool import create_pool
from libs.engine.plan import Node, TraversalGraph
from libs.engine.status import Action
from tests.support import eventually


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with create_pool(database_url, min_size=2, max_size=4) as created:
        yield created


async def _stack(conn: Conn) -> uuid.UUID:
    template_id = await templates.insert(conn, {"heat_template_version": "2018-08-31"}, {}, {})
    stack_id = uuid.uuid4()
    await stacks.insert(conn, stack_id=stack_id, name=f"s-{stack_id.hex[:6]}", project="p",
                        template_id=template_id, disable_rollback=True, timeout_mins=None, tags=[])
    return stack_id


async def test_write_many_is_a_compare_and_set_per_row(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        ids = await resources.insert_new(conn, stack_id, [("a", "T"), ("b", "T"), ("c", "T")])
        rows = await resources.get_many(conn, ids.values())
        a, b, c = rows[ids["a"]], rows[ids["b"]], rows[ids["c"]]
        assert await resources.write(conn, b, status_reason="someone else") is not None  # b moves on
        written = await resources.write_many(conn, [
            (r, {"action": "CREATE", "status": "COMPLETE", "properties": {"v": r.name}, "data": {},
                 "requires": [a.id] if r is not a else [], "reference": None})
            for r in (a, b, c)])
        assert set(written) == {a.id, c.id}  # b lost its compare-and-set and is unchanged
        assert written[c.id].properties == {"v": "c"} and written[c.id].requires == [a.id]
        assert written[a.id].reference is None and written[a.id].version == a.version + 1
        after_b = (await resources.get_many(conn, [b.id]))[b.id]
        assert after_b.action == "INIT" and after_b.status_reason == "someone else"
        with pytest.raises(ValueError, match="same columns"):
            await resources.write_many(conn, [(a, {"action": "X"}), (c, {"status": "Y"})])


async def test_the_unmade_replacement_of_a_row_is_the_same_in_sql_and_in_python(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        ids = await resources.insert_new(conn, stack_id, [("a", "T"), ("b", "T"), ("c", "T")])
        rows = await resources.get_many(conn, ids.values())
        made: dict[str, int] = {}
        # a: two failed creates (the newer counts) and one being deleted; b: only one never started.
        for label, old, action in (("a1", "a", "CREATE"), ("a2", "a", "CREATE"), ("a3", "a", "DELETE"),
                                   ("b1", "b", "INIT")):
            made[label] = await resources.insert_replacement(conn, rows[ids[old]], "T")
            if action != "INIT":
                fresh = await resources.get(conn, made[label])
                assert fresh is not None
                await resources.write(conn, fresh, action=action, status="FAILED")
        every = await resources.for_stack(conn, stack_id)
        in_python = {old: row.id for old, row in resources.unmade_replacements(every).items()}
        in_sql = {}
        for rid in ids.values():
            found = await resources.unmade_replacement(conn, rid)
            if found is not None:
                in_sql[rid] = found.id
    assert in_python == in_sql == {ids["a"]: made["a2"]}


async def test_add_many_keeps_the_order_given(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        new = [events.NewEvent(stack_id, f"r{i}", None, "T", "CREATE", state, "state changed")
               for i in range(50) for state in ("IN_PROGRESS", "COMPLETE")]
        await events.add_many(conn, new)
        stored = await events.for_stack(conn, stack_id)
    assert [(e.resource_name, e.status) for e in stored] == [(e.resource_name, e.status) for e in new]
    assert all(e.physical_resource_id == "" for e in stored)


async def test_finish_nodes_releases_successors_once(pool: asyncpg.Pool) -> None:
    graph = TraversalGraph({"1:u": Node("1:u", 0, ("3:u",)), "2:u": Node("2:u", 0, ("3:u",)),
                            "3:u": Node("3:u", 2, ())})
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        trav = uuid.uuid4()
        await traversals.insert(conn, traversal_id=trav, stack_id=stack_id, action=Action.CREATE,
                                template_id=None, graph=graph, deadline=None, request_id="r")
        async with conn.transaction():
            finished, ready, remaining = await traversals.finish_nodes(conn, trav, ["1:u", "2:u"])
        assert sorted(finished) == ["1:u", "2:u"] and ready == ["3:u"] and remaining == 1
        # A redelivered batch changes nothing.
        assert await traversals.finish_nodes(conn, trav, ["1:u", "2:u"]) == ([], [], -1)
        assert (await traversals.nodes(conn, trav, ["3:u"]))["3:u"].waiting_on == 0
        assert (await traversals.finish_nodes(conn, trav, ["3:u"]))[2] == 0


async def test_overlapping_finishes_in_two_sessions_do_not_deadlock(pool: asyncpg.Pool) -> None:
    # Many nodes releasing the same successors from two connections at once: row
    # locks are taken in one order, so neither waits for the other forever.
    width = 40
    nodes = {f"{i}:u": Node(f"{i}:u", 0, tuple(f"{j}:u" for j in range(1000, 1000 + width)))
             for i in range(width)}
    nodes.update({f"{j}:u": Node(f"{j}:u", width, ()) for j in range(1000, 1000 + width)})
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        trav = uuid.uuid4()
        await traversals.insert(conn, traversal_id=trav, stack_id=stack_id, action=Action.CREATE,
                                template_id=None, graph=TraversalGraph(nodes), deadline=None, request_id="r")

    async def finish(keys: list[str]) -> list[str]:
        async with pool.acquire() as conn, conn.transaction():
            return (await traversals.finish_nodes(conn, trav, keys))[1]

    evens = [f"{i}:u" for i in range(0, width, 2)]
    odds = [f"{i}:u" for i in range(1, width, 2)][::-1]
    first, second = await asyncio.wait_for(asyncio.gather(finish(evens), finish(odds)), timeout=30)
    assert sorted(first + second) == sorted(f"{j}:u" for j in range(1000, 1000 + width))


async def test_resource_locks_are_taken_and_given_back_in_bulk(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as one, pool.acquire() as other:
        assert await locks.try_lock_resources(one, [5, 6, 7, 6]) == {5, 6, 7}
        assert await locks.try_lock_resources(other, [6, 8]) == {8}
        assert not await locks.try_lock_resource(other, 5)  # the one-item lock is the same lock
        await locks.unlock_resources(one, [5, 6, 7])
        assert await locks.try_lock_resources(other, [5, 6]) == {5, 6}


async def _joins(conn: Conn, stack_id: uuid.UUID, width: int) -> uuid.UUID:
    """A traversal of ``width`` nodes that all release one join node."""
    nodes = {f"{i}:u": Node(f"{i}:u", 0, ("join:u",)) for i in range(width)}
    nodes["join:u"] = Node("join:u", width, ())
    trav = uuid.uuid4()
    await traversals.insert(conn, traversal_id=trav, stack_id=stack_id, action=Action.CREATE,
                            template_id=None, graph=TraversalGraph(nodes), deadline=None, request_id=trav.hex)
    return trav


async def _lock_waits(conn: Conn) -> int:
    return int(await conn.fetchval("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                                   " AND datname = current_database()"))


async def test_batches_finishing_two_traversals_in_opposite_orders_never_deadlock(
        pool: asyncpg.Pool) -> None:
    # Issue 14: two workers' batches, each finishing nodes of the same two traversals, named them in
    # opposite orders; each took one traversal's rows and waited for the other's. Held at the point
    # where that happened (a third session holds one traversal's counter row until both wait), they
    # must still both finish once it lets go.
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        one, two = await _joins(conn, stack_id, 2), await _joins(conn, stack_id, 2)

    async def batch(keys: dict[uuid.UUID, list[str]]) -> dict[uuid.UUID, traversals.Finished]:
        async with pool.acquire() as conn, conn.transaction():
            return await traversals.finish_many(conn, keys)

    async with pool.acquire() as holder, pool.acquire() as watcher:
        async with holder.transaction():
            await holder.execute("SELECT 1 FROM traversals WHERE id = $1 FOR UPDATE", two)
            first = asyncio.create_task(batch({one: ["0:u"], two: ["0:u"]}))
            second = asyncio.create_task(batch({two: ["1:u"], one: ["1:u"]}))

            async def both_wait() -> bool:
                return await _lock_waits(watcher) >= 2
            await eventually(both_wait, timeout=10, what="both batches to wait on a lock")
        done = await asyncio.wait_for(asyncio.gather(first, second), timeout=30)
    ready = [n for outcome in done for trav in (one, two) for n in outcome[trav][1]]
    assert sorted(ready) == ["join:u", "join:u"]  # each join released once, by whichever came second
    assert {outcome[trav][2] for outcome in done for trav in (one, two)} == {1, 2}


async def test_many_connections_finishing_nodes_in_random_orders_never_deadlock(pool: asyncpg.Pool) -> None:
    width, sessions = 24, 4
    async with pool.acquire() as conn:
        stack_id = await _stack(conn)
        travs = [await _joins(conn, stack_id, width) for _ in range(3)]
    rng = random.Random(14)
    shares = [[f"{i}:u" for i in range(width) if i % sessions == s] for s in range(sessions)]

    async def batches(share: list[str]) -> None:
        async with pool.acquire() as conn:
            for key in share:
                order = rng.sample(travs, len(travs))
                async with conn.transaction():
                    await traversals.finish_many(conn, {trav: [key] for trav in order})

    await asyncio.wait_for(asyncio.gather(*(batches(s) for s in shares)), timeout=60)
    async with pool.acquire() as conn:
        for trav in travs:
            assert (await traversals.nodes(conn, trav, ["join:u"]))["join:u"].waiting_on == 0
            row = await traversals.get(conn, trav)
            assert row is not None and row.remaining == 1  # every node but the join, counted once
