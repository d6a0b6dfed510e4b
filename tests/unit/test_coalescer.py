"""Group commit: items submitted together run as one batch, each gets its own answer."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from services.worker.coalescer import Coalescer


async def test_items_submitted_together_share_a_batch_and_get_their_own_result() -> None:
    batches: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        batches.append(items)
        await asyncio.sleep(0)
        return [i * 10 for i in items]

    group: Coalescer[int, int] = Coalescer(run, size=4, parallel=1)
    results = await asyncio.gather(*(group.submit(i) for i in range(10)))
    assert results == [i * 10 for i in range(10)]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


async def test_items_arriving_while_a_batch_runs_form_the_next_one() -> None:
    release = asyncio.Event()
    running = asyncio.Event()
    batches: list[list[str]] = []

    async def run(items: list[str]) -> list[str]:
        batches.append(items)
        if items == ["first"]:
            running.set()
            await release.wait()
        return items

    group: Coalescer[str, str] = Coalescer(run, size=64, parallel=1)
    first = asyncio.create_task(group.submit("first"))
    await running.wait()
    later = [asyncio.create_task(group.submit(f"later{i}")) for i in range(3)]
    await asyncio.sleep(0)
    assert batches == [["first"]]  # the others queue behind the running batch
    release.set()
    assert await first == "first" and [await t for t in later] == ["later0", "later1", "later2"]
    assert batches == [["first"], ["later0", "later1", "later2"]]


async def test_a_failed_batch_fails_every_waiter_and_the_next_batch_runs() -> None:
    async def run(items: list[int]) -> list[int]:
        if 0 in items:
            raise RuntimeError("database went away")
        return items

    group: Coalescer[int, int] = Coalescer(run, size=2, parallel=1)
    outcomes = await asyncio.gather(*(group.submit(i) for i in range(4)), return_exceptions=True)
    assert [type(o) for o in outcomes[:2]] == [RuntimeError, RuntimeError]
    assert outcomes[2:] == [2, 3]


async def test_a_cancelled_waiter_does_not_stop_the_others() -> None:
    async def run(items: list[int]) -> list[int]:
        return items

    group: Coalescer[int, int] = Coalescer(run, size=8, parallel=1)
    gone = asyncio.create_task(group.submit(1))
    kept = asyncio.create_task(group.submit(2))
    await asyncio.sleep(0)
    gone.cancel()
    assert await kept == 2
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_a_batch_runs_in_a_context_of_its_own_not_its_first_submitters() -> None:
    # A submitter's context variables (its trace, its log ids) are its own: the batch
    # holds other submitters' items too.
    mine: contextvars.ContextVar[str] = contextvars.ContextVar("mine", default="nobody's")
    seen: list[str] = []

    async def run(items: list[int]) -> list[int]:
        seen.append(mine.get())
        return items

    group: Coalescer[int, int] = Coalescer(run, size=8, parallel=1)

    async def submit(i: int) -> int:
        mine.set(f"submitter {i}")
        return await group.submit(i)

    assert await asyncio.gather(*(submit(i) for i in range(3))) == [0, 1, 2]
    assert seen == ["nobody's"]
