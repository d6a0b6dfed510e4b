"""Running the planner and workers in this test process, on the real servers."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import asyncpg

from libs.config import Settings
from libs.db import events, resources, stacks
from libs.runtime import Runtime, open_runtime
from services.planner.main import body as planner_body
from services.worker.main import body as worker_body
from tests.support import eventually


@contextlib.asynccontextmanager
async def engine(settings: Settings, workers: int = 1) -> AsyncIterator[Runtime]:
    """A planner and ``workers`` workers; yields an api-like runtime to submit with."""
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(open_runtime(settings, "api"))
        planner = await stack.enter_async_context(open_runtime(settings, "planner"))
        await stack.enter_async_context(planner_body(planner))
        for _ in range(workers):
            worker = await stack.enter_async_context(open_runtime(settings, "worker"))
            await stack.enter_async_context(worker_body(worker))
        yield api


async def settled(pool: asyncpg.Pool, stack_id: uuid.UUID, *, timeout: float = 30.0,
                  status: str | None = None) -> stacks.StackRow:
    async def probe() -> stacks.StackRow | None:
        async with pool.acquire() as conn:
            row = await stacks.get(conn, stack_id)
        if row is None or row.status == "IN_PROGRESS":
            return None
        if status is not None and row.stack_status != status:
            return None
        return row
    return await eventually(probe, timeout=timeout, interval=0.05, what=f"stack {stack_id} to settle")


async def stack_row(pool: asyncpg.Pool, stack_id: uuid.UUID) -> stacks.StackRow:
    async with pool.acquire() as conn:
        row = await stacks.get(conn, stack_id)
    assert row is not None
    return row


async def resource_rows(pool: asyncpg.Pool, stack_id: uuid.UUID) -> dict[str, resources.ResourceRow]:
    async with pool.acquire() as conn:
        return {r.name: r for r in await resources.for_stack(conn, stack_id) if r.is_current}


async def event_lines(pool: asyncpg.Pool, stack_id: uuid.UUID) -> list[tuple[str, str, str]]:
    async with pool.acquire() as conn:
        rows = await events.for_stack(conn, stack_id)
    return [(e.resource_name, e.resource_status, e.reason) for e in rows]


def hot(resources_section: dict[str, Any], outputs: dict[str, Any] | None = None) -> dict[str, Any]:
    template: dict[str, Any] = {"heat_template_version": "2016-10-14", "resources": resources_section}
    if outputs:
        template["outputs"] = outputs
    return template
