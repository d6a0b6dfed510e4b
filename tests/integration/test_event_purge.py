"""Heat's ``max_events_per_stack``: the notifier purges a stack's oldest published events, never one
it has not sent, keeping as many as Heat keeps after the same writes."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from libs.config import EventRetention, Settings
from libs.db import Conn, events, stacks, templates
from libs.runtime import Runtime, open_runtime
from services.api.app import make_app
from services.notifier.outbox import publish_pending
from tests.integration.api_support import Client


async def _stack(conn: Conn, name: str) -> uuid.UUID:
    template_id = await templates.insert(conn, {"heat_template_version": "2018-08-31"}, {}, {})
    stack_id = uuid.uuid4()
    await stacks.insert(conn, stack_id=stack_id, name=name, project="demo", template_id=template_id,
                        disable_rollback=True, timeout_mins=None, tags=[])
    return stack_id


async def _write(conn: Conn, stack_id: uuid.UUID, count: int, first: int = 0) -> None:
    await events.add_many(conn, [events.NewEvent(
        stack_id=stack_id, resource_name=f"r{i}", physical_resource_id="", resource_type="OS::Heat::None",
        action="CREATE", status="COMPLETE", reason="") for i in range(first, first + count)])


async def _names(conn: Conn, stack_id: uuid.UUID) -> list[tuple[str, bool]]:
    rows = await conn.fetch("SELECT resource_name, published FROM events WHERE stack_id = $1 ORDER BY seq",
                            stack_id)
    return [(r["resource_name"], r["published"]) for r in rows]


async def _publish_all(rt: Runtime) -> None:
    while await publish_pending(rt):
        pass


@pytest.mark.parametrize("rounds", [1, 32])
async def test_a_stack_keeps_the_newest_events_heat_keeps(settings: Settings, rounds: int) -> None:
    # Heat 27.0.1 with max_events_per_stack 10 and event_purge_batch_size 2 (so that it checks at
    # every write), after a chain of 15 OS::Heat::None: of its 32 events, the newest 10 are listed.
    retention = EventRetention(max_events=10, purge_batch=2)
    async with open_runtime(dataclasses.replace(settings, event_retention=retention), "notifier") as rt:
        async with rt.pool.acquire() as conn:
            stack_id = await _stack(conn, "chain")
        for start in range(0, 32, 32 // rounds):  # published in one round, or one event a round
            async with rt.pool.acquire() as conn:
                await _write(conn, stack_id, 32 // rounds, start)
            await _publish_all(rt)
        async with rt.pool.acquire() as conn:
            assert await _names(conn, stack_id) == [(f"r{i}", True) for i in range(22, 32)]


async def test_the_oldest_published_events_go_and_the_unsent_stay(settings: Settings) -> None:
    retention = EventRetention(max_events=10, purge_batch=4)
    async with open_runtime(dataclasses.replace(settings, event_retention=retention), "notifier") as rt:
        async with rt.pool.acquire() as conn:
            big, small = await _stack(conn, "big"), await _stack(conn, "small")
            await _write(conn, big, 25)
            await _write(conn, small, 10)
        async with rt.pool.acquire() as holder, holder.transaction():
            # Another notifier holds the big stack's two oldest events: they are not published yet.
            await holder.execute("SELECT seq FROM events WHERE stack_id = $1"
                                 " AND resource_name IN ('r0', 'r1') FOR UPDATE", big)
            await _publish_all(rt)
            async with rt.pool.acquire() as conn:
                # Heat, purging 4 before a write at 10 or more, holds 7 after 23 writes; the two unsent
                # ones are kept.
                assert await _names(conn, big) == [("r0", False), ("r1", False)] + [
                    (f"r{i}", True) for i in range(18, 25)]
                # 10 events, the limit: Heat purges before the next write, not at this one.
                assert len(await _names(conn, small)) == 10
        await _publish_all(rt)
        async with rt.pool.acquire() as conn:
            assert await _names(conn, big) == [("r0", True), ("r1", True)] + [
                (f"r{i}", True) for i in range(18, 25)]
            await _write(conn, small, 1, 10)  # the eleventh: the 4 oldest go before it
        await _publish_all(rt)
        async with rt.pool.acquire() as conn:
            assert await _names(conn, small) == [(f"r{i}", True) for i in range(4, 11)]
            # Listing the newest page still works by marker after a purge.
            newest = await events.list_events(conn, events.EventQuery(stack_id=small, limit=2))
            rest = await events.list_events(conn, events.EventQuery(stack_id=small, marker=newest[-1].id))
            assert [e.resource_name for e in newest + rest] == [f"r{i}" for i in range(10, 3, -1)]


async def test_zero_keeps_every_event(settings: Settings) -> None:
    retention = EventRetention(max_events=0, purge_batch=1)
    async with open_runtime(dataclasses.replace(settings, event_retention=retention), "notifier") as rt:
        async with rt.pool.acquire() as conn:
            stack_id = await _stack(conn, "all")
            await _write(conn, stack_id, 30)
        await _publish_all(rt)
        async with rt.pool.acquire() as conn:
            assert [published for _, published in await _names(conn, stack_id)] == [True] * 30


async def _stream_ids(api: Client, path: str, last_seen: str, count: int) -> tuple[list[str], str]:
    """The ids of the first ``count`` events a stream resumed after ``last_seen`` sends, and its text."""
    async with api.get(f"{path}/events/stream", headers={"Last-Event-ID": last_seen}) as r:
        assert r.status == 200, await r.text()
        text = ""

        async def read() -> list[str]:
            nonlocal text
            while True:
                text += (await r.content.readany()).decode()
                ids = [line[4:] for line in text.splitlines() if line.startswith("id: ")]
                if len(ids) >= count:
                    return ids
        return await asyncio.wait_for(read(), timeout=30), text


async def test_a_stream_resumed_after_a_purged_event_starts_at_the_oldest_kept(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    """A client that saw an event since purged gets every kept event, told that some were purged;
    an event id the stack never had is still 404."""
    retention = EventRetention(max_events=10, purge_batch=4)
    api = await aiohttp_client(make_app(settings))
    async with open_runtime(dataclasses.replace(settings, event_retention=retention), "notifier") as rt:
        async with rt.pool.acquire() as conn:
            stack_id = await _stack(conn, "streamed")
            await _write(conn, stack_id, 8)
            seen = await events.list_events(conn, events.EventQuery(stack_id=stack_id, sort_desc=False))
        path = f"/v1/demo/stacks/streamed/{stack_id}"
        never = str(uuid.uuid4())
        async with api.get(f"{path}/events/stream", headers={"Last-Event-ID": never}) as r:
            assert r.status == 404  # nothing purged yet: an unknown event is unknown
        async with rt.pool.acquire() as conn:
            await _write(conn, stack_id, 4)
        await _publish_all(rt)
        async with rt.pool.acquire() as conn:
            kept = await events.list_events(conn, events.EventQuery(stack_id=stack_id, sort_desc=False))
        assert len(kept) == 8 and seen[2].id not in {e.id for e in kept}  # the oldest 4 went
        ids, text = await _stream_ids(api, path, str(seen[2].id), len(kept))
        assert ids == [str(e.id) for e in kept]
        assert text.startswith(": the last event seen was purged")
        # After a kept event, as before: the rest, no comment.
        ids, text = await _stream_ids(api, path, str(kept[3].id), 2)
        assert ids == [str(e.id) for e in kept[4:]] and not text.startswith(":")
        async with api.get(f"{path}/events/stream", headers={"Last-Event-ID": "not-an-id"}) as r:
            assert r.status == 404
