"""The evaluation pool: a job past its deadline is killed, its process replaced, and the pool goes on."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import time
from collections.abc import AsyncIterator

import pytest

from libs import config
from libs.evaluation_pool import (
    EvaluationCrashed,
    EvaluationPool,
    EvaluationTimeout,
    EvaluationTooLarge,
    opened,
    opened_for,
)
from libs.template import budgets
from libs.template.errors import StackValidationFailed

TIMEOUT = 0.5


# The jobs: module-level, so that a pool process can import them by name.
def add(a: int, b: int) -> int:
    return a + b


def catastrophic(length: int) -> bool:
    # The expression: exponential backtracking, minutes at 30 characters.
    return re.match("(a+)+$", "a" * length + "!") is not None


def refuse() -> None:
    raise StackValidationFailed("bad value", ("resources", "r", "properties", "value"), "Property error")


def die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def pid() -> int:
    return os.getpid()


@pytest.fixture
async def pool() -> AsyncIterator[EvaluationPool]:
    async with opened(2, TIMEOUT) as started:
        await _warmed(started, 2)
        yield started


async def _warmed(pool: EvaluationPool, processes: int) -> None:
    """Each process has imported this module: a job's first run in a process imports the module
    it is in, which a loaded machine may take longer than TIMEOUT to do (the service's own jobs
    are in modules its forkserver loaded before forking)."""
    deadline = time.monotonic() + 60
    # All at once, so that each process takes one; one past TIMEOUT is replaced, and the new
    # one imports anew on the next round.
    while not all(isinstance(answer, int) for answer in await asyncio.gather(
            *(pool.run(pid) for _ in range(processes)), return_exceptions=True)):
        assert time.monotonic() < deadline, "the pool's processes never answered in time"
    pool.replaced = 0  # what the test counts starts here


async def test_a_job_answers_with_its_value(pool: EvaluationPool) -> None:
    assert await pool.run(add, 2, b=3) == 5
    assert await pool.run(pid) != os.getpid()


async def test_an_error_crosses_whole(pool: EvaluationPool) -> None:
    with pytest.raises(StackValidationFailed) as caught:
        await pool.run(refuse)
    assert str(caught.value) == "Property error: resources.r.properties.value: bad value"
    assert caught.value.path == ("resources", "r", "properties", "value")
    assert caught.value.error_type == "StackValidationFailed"


async def test_the_deadline_kills_and_replaces_the_process(pool: EvaluationPool) -> None:
    before = {await pool.run(pid), await pool.run(pid)}
    started = time.monotonic()
    with pytest.raises(EvaluationTimeout) as caught:
        await pool.run(catastrophic, 40)
    assert time.monotonic() - started < 10 * TIMEOUT
    assert caught.value.error_type == "RequestLimitExceeded"
    assert str(caught.value) == "Request limit exceeded: Template evaluation took longer than 0.5 seconds."
    assert pool.replaced == 1
    # The pool keeps working, with a new process in place of the killed one.
    assert await pool.run(add, 1, 1) == 2
    after = {await pool.run(pid) for _ in range(4)}
    assert len(after - before) >= 1
    for old in before - after:
        with pytest.raises(ProcessLookupError):
            os.kill(old, 0)


async def test_the_other_process_answers_while_one_overruns() -> None:
    # A deadline far away: however slow the machine, the stuck job is still running below.
    async with opened(2, 60) as pool:
        stuck = asyncio.create_task(pool.run(catastrophic, 40))
        await asyncio.sleep(0)  # the stuck job takes its process first
        assert await pool.run(add, 20, 22) == 42
        assert not stuck.done()
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck


async def test_a_process_that_dies_is_replaced(pool: EvaluationPool) -> None:
    with pytest.raises(EvaluationCrashed):
        await pool.run(die)
    assert pool.replaced == 1
    assert [await pool.run(add, i, 0) for i in range(3)] == [0, 1, 2]


async def test_a_cancelled_caller_leaves_no_busy_process() -> None:
    async with opened(2, 60) as pool:
        stuck = asyncio.create_task(pool.run(catastrophic, 40))
        await asyncio.sleep(0)
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        assert pool.replaced == 1
        # Both processes answer: the abandoned one was replaced, not left matching for a minute.
        answers = await asyncio.wait_for(asyncio.gather(pool.run(pid), pool.run(pid)), 30)
        assert len(set(answers)) == 2


async def test_closing_ends_the_processes() -> None:
    async with opened(1, TIMEOUT) as pool:
        child = await pool.run(pid)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


async def test_no_processes_means_inline() -> None:
    async with opened(0, TIMEOUT) as pool:
        assert await pool.run(pid) == os.getpid()


def hog(megabytes: int) -> int:
    return len(bytearray(megabytes * 2**20))


def address_space_mb() -> int:
    with open("/proc/self/status") as status:
        line = next(x for x in status if x.startswith("VmSize:"))
    return int(line.split()[1]) // 1024


async def test_a_job_past_the_memory_cap_is_refused_and_the_process_goes_on() -> None:
    async with opened(1, 10 * TIMEOUT, megabytes=512) as pool:
        assert await pool.run(address_space_mb) < 512
        with pytest.raises(EvaluationTooLarge) as caught:
            await pool.run(hog, 1024)
        assert str(caught.value) == ("Request limit exceeded: Template evaluation needed more than 512 MB"
                                     " of memory.")
        assert await pool.run(hog, 16) == 16 * 2**20
        assert pool.replaced == 0


async def test_one_owner_leaves_a_process_to_the_others() -> None:
    async with opened(2, 60) as pool:
        attacker = pool.on_behalf_of("attacker")
        stuck = [asyncio.create_task(attacker.run(catastrophic, 40)) for _ in range(3)]
        await asyncio.sleep(0)
        # Without shares the three would hold both processes for a minute.
        assert await asyncio.wait_for(pool.on_behalf_of("bystander").run(add, 1, 2), 30) == 3
        assert not any(task.done() for task in stuck)
        for task in stuck:
            task.cancel()
        await asyncio.gather(*stuck, return_exceptions=True)


async def test_a_services_pool_evaluates_under_the_services_budgets() -> None:
    # The processes start from a fresh forkserver: without the service's budgets they would
    # evaluate under the defaults, and an operator's lower limit would not hold there.
    lowered = config.load({"EMBER_MAX_VALUE_SIZE": "2048", "EMBER_EVALUATION_PROCESSES": "1"})
    async with opened_for(lowered) as pool:
        assert await pool.run(budgets.current) == lowered.budgets
        assert lowered.budgets != budgets.Budgets()
