"""By hand: a stack paused at many breakpoints at once, what the pause costs, then continue.

``python -m bench.hooks --resources 1000`` runs one planner and two workers as
processes (as ``bench.engine``), creates a stack of N resources each with a
``pre-create`` hook, and prints: the seconds until every node is paused, the
work messages still pending in JetStream while paused (none: a paused node
holds no message, worker or connection), the workers' CPU seconds spent in a
quiet interval while paused, and the seconds from ``continue`` to
CREATE_COMPLETE, with every process's peak RSS. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry import trace

from bench import by_hand
from bench.engine import BenchError, Servers, Services, Watched, limits_for, wait_ready
from libs import operations, pauses
from libs.db import stacks
from libs.db.pool import create_pool
from libs.engine.hooks import HookMode
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.resources.registry import default_registry
from libs.template.request import StackRequest


def template(count: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14",
            "resources": {f"r{i}": {"type": "OS::Heat::None"} for i in range(count)}}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _until(probe: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not await probe():
        if time.monotonic() > deadline:
            raise BenchError(f"{what}: not after {timeout:g}s")
        await asyncio.sleep(0.1)


async def measure(servers: Servers, services: Services, count: int, quiet: float, timeout: float) -> None:
    names = Names(servers.prefix)
    async with (create_pool(servers.database_url, min_size=1, max_size=4) as pool,
                Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="ember-bench") as bus):
        await bus.ensure_topology()
        await wait_ready(bus, services)
        watched = [Watched("bench", os.getpid()), *services.watched()]
        tmpl = template(count)
        request = StackRequest(template=tmpl, environment={
            "resource_registry": {"resources": {"r*": {"hooks": "pre-create"}}}})
        started = time.monotonic()
        row = await operations.create_stack(pool, bus, project="bench", name="paused", stack_request=request,
                                            limits=limits_for(tmpl), registry=default_registry())

        async def all_paused() -> bool:
            async with pool.acquire() as conn:
                n = await conn.fetchval("SELECT count(*) FROM hooks WHERE stack_id = $1"
                                        " AND cleared_at IS NULL", row.id)
            return bool(n == count)
        await _until(all_paused, timeout, "every node paused")
        paused_after = time.monotonic() - started
        backlog = await bus.backlog(names.workers)
        before = {w.label: _cpu_seconds(w.pid) for w in services.watched()}
        await asyncio.sleep(quiet)  # a quiet interval: what does waiting cost?
        spent = {label: _cpu_seconds(pid) - before[label] for label, pid in
                 ((w.label, w.pid) for w in services.watched())}
        async with pool.acquire() as conn:
            stored = await stacks.get(conn, row.id)
        assert stored is not None
        started = time.monotonic()
        released = await pauses.release_tree(pool, bus, stored, by="continue", mode=HookMode.RUN)

        async def complete() -> bool:
            async with pool.acquire() as conn:
                now = await stacks.get(conn, row.id)
            assert now is not None
            if now.status == "FAILED":
                raise BenchError(f"the stack failed: {now.status_reason}")
            return now.stack_status == "CREATE_COMPLETE"
        await _until(complete, timeout, "CREATE_COMPLETE")
        finished = time.monotonic() - started
        peaks = ", ".join(f"{w.label} {w.peak_rss_mb() or 0:.0f} MB" for w in watched)
        cpu = ", ".join(f"{label} {s:.2f} s" for label, s in spent.items())
        print(f"{count} nodes paused after {paused_after:.2f} s; while paused: {backlog.pending} work"
              f" message(s) pending, {backlog.unacked} unacked; CPU in {quiet:g} s paused: {cpu}",
              flush=True)
        print(f"continue released {len(released)} node(s); CREATE_COMPLETE after {finished:.2f} s; "
              f"peak RSS: {peaks}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hooks", description=__doc__)
    parser.add_argument("--resources", type=int, default=1000, help="resources, each paused (1000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quiet", type=float, default=5.0, help="seconds to watch the paused stack (5)")
    parser.add_argument("--timeout", type=float, default=600.0)
    options = parser.parse_args(argv)

    async def measured(servers: Servers, services: Services) -> None:
        await measure(servers, services, options.resources, options.quiet, options.timeout)
    return by_hand.run("hooks", options.workers, measured)


if __name__ == "__main__":
    raise SystemExit(main())
