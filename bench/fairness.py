"""By hand: does one project's big stack starve another project's small one?

``python -m bench.fairness --members 20000`` runs one planner and two workers
as processes (as ``bench.engine``, the resource limit lifted as
``EMBER_MAX_RESOURCES_PER_STACK=-1`` would), creates in project A a stack of
one ``ResourceGroup`` of N ``OS::Heat::None`` members, waits until its members
are being made, then creates in project B a stack of one resource and prints
the seconds B takes to complete (and, alone on an idle engine beforehand, the
same stack's seconds as the baseline), then deletes A while it is still being
made and prints how long that delete takes. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from opentelemetry import trace

from bench import by_hand
from bench.engine import BenchError, Servers, Services, limits_for, wait_ready
from libs import operations
from libs.db import stacks
from libs.db.pool import Connections, create_pool
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.resources.registry import default_registry
from libs.template.request import StackRequest

SMALL = {"heat_template_version": "2016-10-14", "resources": {"one": {"type": "OS::Heat::None"}}}


def big(members: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {"g": {
        "type": "OS::Heat::ResourceGroup",
        "properties": {"count": members, "resource_def": {"type": "OS::Heat::None"}}}}}


async def _until(probe: Callable[[], Awaitable[bool]], timeout: float, what: str) -> float:
    started = time.monotonic()
    while not await probe():
        if time.monotonic() - started > timeout:
            raise BenchError(f"{what}: not after {timeout:g}s")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def _status(pool: Connections, stack_id: uuid.UUID) -> str:
    async with pool.acquire() as conn:
        row = await stacks.get(conn, stack_id)
    assert row is not None
    return row.stack_status


async def _small(pool: Connections, bus: Bus, name: str, timeout: float) -> float:
    started = time.monotonic()
    row = await operations.create_stack(pool, bus, project="project-b", name=name,
                                        stack_request=StackRequest(template=SMALL),
                                        registry=default_registry())

    async def done() -> bool:
        return await _status(pool, row.id) == "CREATE_COMPLETE"
    await _until(done, timeout, f"{name} CREATE_COMPLETE")
    return time.monotonic() - started


async def measure(servers: Servers, services: Services, members: int, timeout: float) -> None:
    names = Names(servers.prefix)
    async with (create_pool(servers.database_url, min_size=1, max_size=4) as pool,
                Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="ember-bench") as bus):
        await bus.ensure_topology()
        await wait_ready(bus, services)
        alone = await _small(pool, bus, "alone", timeout)
        tmpl = big(members)
        row = await operations.create_stack(pool, bus, project="project-a", name="big",
                                            stack_request=StackRequest(template=tmpl),
                                            limits=limits_for(tmpl), registry=default_registry())

        async def members_made() -> int:
            async with pool.acquire() as conn:
                made = await conn.fetchval(
                    "SELECT count(*) FROM resources r JOIN stacks s ON s.id = r.stack_id"
                    " WHERE s.parent_id = $1 AND r.status = 'COMPLETE' AND r.action = 'CREATE'", row.id)
            return int(made or 0)
        peak = 0

        async def queued() -> bool:
            # The group's first wave is all queued once the backlog stops growing.
            nonlocal peak
            pending = (await bus.backlog(names.workers)).pending
            done = peak > 0 and pending <= peak
            peak = max(peak, pending)
            await asyncio.sleep(0.25)
            return done
        await _until(queued, timeout, "the group's members queued")
        shared = await _small(pool, bus, "beside-big", timeout)
        print(f"project B's 1-resource stack: {alone:.2f} s alone, {shared:.2f} s beside project A's "
              f"{members}-member group (B sent with {peak} work message(s) pending)", flush=True)
        async with pool.acquire() as conn:
            stored = await stacks.get(conn, row.id)
        assert stored is not None
        made_before = await members_made()
        started = time.monotonic()
        await operations.delete_stack(pool, bus, stored)

        async def deleted() -> bool:
            status = await _status(pool, row.id)
            if status == "DELETE_FAILED":
                raise BenchError("the delete failed")
            return status == "DELETE_COMPLETE"
        await _until(deleted, timeout, "DELETE_COMPLETE")
        gone = time.monotonic() - started
        await asyncio.sleep(1.0)
        pending = (await bus.backlog(names.workers)).pending
        print(f"deleting the group while it grows ({made_before} member(s) made when asked): DELETE_COMPLETE "
              f"after {gone:.2f} s; work messages pending 1 s later: {pending}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.fairness", description=__doc__)
    parser.add_argument("--members", type=int, default=20000, help="members of project A's group (20000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=900.0)
    options = parser.parse_args(argv)

    async def measured(servers: Servers, services: Services) -> None:
        await measure(servers, services, options.members, options.timeout)
    return by_hand.run("fairness", options.workers, measured, {"EMBER_MAX_RESOURCES_PER_STACK": "-1"})


if __name__ == "__main__":
    sys.exit(main())
