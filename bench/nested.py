"""By hand: a resource group of many members, and a stack of many nested stacks, created and deleted.

``python -m bench.nested --group 10000 --nested 100`` runs one planner and
two workers as processes on embedded servers (or ``EMBER_*_URL``, as
``bench.engine``), then, for each shape: the create (until the parent settles),
a no-change update, an update that changes one resource (the group grows by
one member; a stack of nested stacks gets one more) and the delete, printing
seconds and every process's peak RSS. Not a test: nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
import uuid
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace

from bench import by_hand
from bench.engine import BenchError, Servers, Services, Watched, limits_for, wait_ready
from libs import operations
from libs.db import stacks
from libs.db.pool import create_pool
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.resources.registry import default_registry
from libs.template.request import StackRequest

CHILD = "heat_template_version: 2016-10-14\nresources:\n  inner: {type: OS::Heat::None}\n"


def group_template(members: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {"group": {
        "type": "OS::Heat::ResourceGroup",
        "properties": {"count": members, "resource_def": {"type": "OS::Heat::None"}}}}}


def nested_template(count: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {
        f"n{i}": {"type": "OS::Heat::Stack", "properties": {"template": CHILD}} for i in range(count)}}


async def _settle(pool: Any, stack_id: uuid.UUID, action: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        async with pool.acquire() as conn:
            row = await stacks.get(conn, stack_id)
        assert row is not None
        if row.status != "IN_PROGRESS":
            if row.stack_status != f"{action}_COMPLETE":
                raise BenchError(f"the stack ended {row.stack_status}: {row.status_reason}")
            return
        if time.monotonic() > deadline:
            raise BenchError(f"still {row.stack_status} after {timeout:g}s")
        await asyncio.sleep(0.1)


# A shape: its label, its template, and the same with one resource more (the one-resource update).
Shape = tuple[str, dict[str, Any], dict[str, Any]]


async def _phase(pool: Any, stack_id: uuid.UUID, action: str, timeout: float, started: float) -> float:
    await _settle(pool, stack_id, action, timeout)
    return time.monotonic() - started


async def _update(pool: Any, bus: Bus, stack_id: uuid.UUID, tmpl: dict[str, Any], timeout: float) -> float:
    async with pool.acquire() as conn:
        stored = await stacks.get(conn, stack_id)
    assert stored is not None
    started = time.monotonic()
    await operations.update_stack(pool, bus, stored, stack_request=StackRequest(template=tmpl),
                                  limits=limits_for(tmpl), registry=default_registry())
    return await _phase(pool, stack_id, "UPDATE", timeout, started)


async def _kept_bytes(pool: Any, stack_id: uuid.UUID) -> int:
    """What the stack's nesting resources and their nested stacks keep of their members (bytes of
    the resources' data and attributes, and of the nested stacks' outputs), as PostgreSQL stores it."""
    async with pool.acquire() as conn:
        value = await conn.fetchval(
            "SELECT coalesce(sum(pg_column_size(r.data) + pg_column_size(r.attributes)), 0)"
            " + (SELECT coalesce(sum(pg_column_size(s.outputs)), 0) FROM stacks s WHERE s.parent_id = $1)"
            " FROM resources r WHERE r.stack_id = $1", stack_id)
    return int(value or 0)


async def measure(servers: Servers, services: Services, shapes: list[Shape], timeout: float) -> None:
    names = Names(servers.prefix)
    registry = default_registry()
    async with (create_pool(servers.database_url, min_size=1, max_size=4) as pool,
                Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="ember-bench") as bus):
        await bus.ensure_topology()
        await wait_ready(bus, services)
        watched = [Watched("bench", os.getpid()), *services.watched()]
        for label, tmpl, grown in shapes:
            for proc in watched:
                proc.reset_peak()
            started = time.monotonic()
            row = await operations.create_stack(pool, bus, project="bench", name=label,
                                                stack_request=StackRequest(template=tmpl),
                                                limits=limits_for(tmpl), registry=registry)
            created = await _phase(pool, row.id, "CREATE", timeout, started)
            kept = await _kept_bytes(pool, row.id)
            same = await _update(pool, bus, row.id, tmpl, timeout)
            one = await _update(pool, bus, row.id, grown, timeout)
            async with pool.acquire() as conn:
                stored = await stacks.get(conn, row.id)
            assert stored is not None
            started = time.monotonic()
            await operations.delete_stack(pool, bus, stored)
            deleted = await _phase(pool, row.id, "DELETE", timeout, started)
            peaks = ", ".join(f"{w.label} {w.peak_rss_mb() or 0:.0f} MB" for w in watched)
            print(f"{label:<16} create {created:8.2f} s   no-change update {same:7.2f} s"
                  f"   one-resource update {one:7.2f} s   delete {deleted:8.2f} s   peak RSS: {peaks}"
                  f"   kept of the members: {kept / 1024:.1f} KiB", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.nested", description=__doc__)
    parser.add_argument("--group", type=lambda text: [int(n) for n in text.split(",")], default=[1000],
                        help="members of the resource group; several sizes comma-separated (1000)")
    parser.add_argument("--nested", type=int, default=20, help="nested stacks in one stack (20; 0: none)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=1800.0)
    options = parser.parse_args(argv)
    shapes: list[Shape] = []
    for size in options.group:
        shapes.append((f"group-{size}", group_template(size), group_template(size + 1)))
    if options.nested:
        shapes.append((f"nested-{options.nested}", nested_template(options.nested),
                       nested_template(options.nested + 1)))

    async def measured(servers: Servers, services: Services) -> None:
        await measure(servers, services, shapes, options.timeout)
    # The workers refuse a nested stack past the limit, as Heat's engine does; the operator lifts it.
    return by_hand.run("nested", options.workers, measured, {"EMBER_MAX_RESOURCES_PER_STACK": "-1"})


if __name__ == "__main__":
    raise SystemExit(main())
