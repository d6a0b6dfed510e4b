"""Retry loops that used to have no end: each now ends, and each test has a deadline.

The worker's loops are in ``test_engine_deletes`` (a type that never resolves, a
delete waiting on what it can cancel); here are the planner's, the stale
traversal's node whose predecessors never finish, and the plan outbox sweep.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from libs import operations, plan_requests
from libs.config import Settings
from libs.consuming import consuming
from libs.db import dead_letters, plan_outbox, stacks, traversals
from libs.engine.status import Action
from libs.messaging.consumer import Delivery
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import PlanRequest, WorkItem
from libs.resources.base import ResourceType
from libs.resources.registry import Registry, default_registry
from libs.runtime import Runtime, open_runtime
from libs.telemetry.propagation import Stored
from libs.template.registry import ResourceRegistry
from libs.template.request import StackRequest
from services.planner.outbox_sweep import sweep_once
from services.planner.planning import give_up_plan, handle_plan
from services.worker import batch
from services.worker.arrival import Arrival
from services.worker.context import WorkerContext
from services.worker.main import body as worker_body
from tests.integration.engine_support import engine, event_lines, hot, settled, stack_row
from tests.support import eventually


class _Broken(Registry):
    """A registry that fails on one type the same way every time (as a plugin with a bug would)."""

    def implementing(self, type_name: str, *, resource_name: str,
                     environment: ResourceRegistry | None) -> ResourceType:
        if type_name == "OS::Heat::None":
            raise RuntimeError("this plugin is broken")
        return super().implementing(type_name, resource_name=resource_name, environment=environment)


@contextlib.asynccontextmanager
async def _engine_with_a_broken_planner(settings: Settings) -> AsyncIterator[Runtime]:
    broken = _Broken()
    for plugin in default_registry().types():
        broken.register(type(default_registry().get(plugin)))

    def handlers(rt: Runtime) -> Dispatch:
        async def plan(request: PlanRequest, delivery: Delivery) -> None:
            await handle_plan(rt, request, delivery, registry=broken)

        async def give_up(request: PlanRequest, error: BaseException) -> None:
            await give_up_plan(rt, request, error)
        return Dispatch({PlanRequest: plan}, give_ups={PlanRequest: give_up})

    planner_body = consuming(lambda rt: rt.names.planners, handlers)
    async with contextlib.AsyncExitStack() as stack:
        api = await stack.enter_async_context(open_runtime(settings, "api"))
        planner = await stack.enter_async_context(open_runtime(settings, "planner"))
        await stack.enter_async_context(planner_body(planner))
        worker = await stack.enter_async_context(open_runtime(settings, "worker"))
        await stack.enter_async_context(worker_body(worker))
        yield api


async def test_a_plan_that_fails_the_same_way_every_time_fails_the_stack(settings: Settings) -> None:
    template = hot({"a": {"type": "OS::Heat::None"}})
    async with _engine_with_a_broken_planner(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="unplannable",
                                             stack_request=StackRequest(template=template))
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=30)  # a create asks no plugin
        # An update asks the plugin which resources it leaves alone: that fails every time.
        grown = hot({"a": {"type": "OS::Heat::None"}, "b": {"type": "OS::Heat::None"}})
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=grown))
        done = await settled(api.pool, made.id, timeout=30)
        reason = "RuntimeError: this plugin is broken"
        assert (done.stack_status, done.status_reason) == ("UPDATE_FAILED", reason)
        assert ("unplannable", "UPDATE_FAILED", reason) in await event_lines(api.pool, made.id)


async def _work_pending(api: Runtime) -> int:
    info = await api.bus.js.consumer_info(api.names.workers.stream, api.names.workers.durable)
    return int(info.num_pending + info.num_ack_pending)


async def test_a_stale_node_whose_predecessors_never_finish_is_dropped(settings: Settings) -> None:
    template = hot({"a": {"type": "OS::Heat::None"}, "b": {"type": "OS::Heat::None", "depends_on": "a"}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="stale",
                                             stack_request=StackRequest(template=template))
        created = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=30)
        old = created.current_traversal
        assert old is not None
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=template))
        await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=30)
        # A node of the old (now stale) traversal whose predecessor never finished, delivered
        # (a redelivery, a sweep): it started nothing, and nothing will ever release it.
        async with api.pool.acquire() as conn:
            node = await conn.fetchval("SELECT node FROM traversal_nodes WHERE traversal_id = $1"
                                       " AND node LIKE '%:u' AND cardinality(successors) = 0", old)
            await conn.execute("UPDATE traversal_nodes SET waiting_on = 1, done = false"
                               " WHERE traversal_id = $1 AND node = $2", old, node)
        item = WorkItem(stack_id=str(made.id), traversal_id=str(old), node=node)
        await api.bus.publish(api.names.work(str(made.id)), item, msg_id=f"{item.msg_id}:again")

        async def drained() -> bool:
            return await _work_pending(api) == 0
        await eventually(drained, timeout=10, what="the stale node's message to be dropped")


async def _left_behind(pool: asyncpg.Pool, *, msg_id: str, stack_id: uuid.UUID, subject: str,
                       payload: bytes, age: int) -> None:
    async with pool.acquire() as conn:
        await plan_outbox.add(conn, msg_id=msg_id, stack_id=stack_id, subject=subject, payload=payload,
                              trace=Stored())
        await conn.execute("UPDATE plan_outbox SET created_at = now() - make_interval(secs => $2)"
                           " WHERE msg_id = $1", msg_id, float(age))


async def _by_request(pool: asyncpg.Pool, stack_id: uuid.UUID, request_id: str) -> uuid.UUID | None:
    async with pool.acquire() as conn:
        return await traversals.by_request(conn, stack_id, request_id)


async def test_a_left_behind_request_no_planner_can_read_holds_up_no_other(settings: Settings) -> None:
    quick = dataclasses.replace(settings, plan_sweep_seconds=3600.0)  # swept by hand below
    template = hot({"a": {"type": "OS::Heat::None"}})
    async with engine(quick) as api:
        stacks_made = []
        for name in ("unreadable", "readable"):
            made = await operations.create_stack(api.pool, api.bus, project="demo", name=name,
                                                 stack_request=StackRequest(template=template))
            created = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=30)
            stacks_made.append(made.id)
        bad, good = stacks_made
        # Left behind, the older first: one nobody can decode (a newer Ember's, or damaged), then a good one.
        await _left_behind(api.pool, msg_id="unreadable", stack_id=bad, age=120,
                           subject=api.names.plan("demo", str(bad)), payload=b'{"kind": "plan", "v": 99}')
        # A check asked for and committed, its publish never made (as operations.stack_action).
        async with api.pool.acquire() as conn, conn.transaction():
            await stacks.set_desired(conn, good, action=Action.CHECK, template_id=created.template_id)
            request = await plan_requests.stage(conn, api.names, created, Action.CHECK, reason="check")
        assert await sweep_once(api, older_than=0) == 2
        async with api.pool.acquire() as conn:
            assert await plan_outbox.pending(conn) == 0  # neither is left to fail again next round
            [letter] = await dead_letters.listing(conn)  # the unreadable one is set aside, to look at
        assert (letter.source, letter.msg_id, letter.stack_id) == ("plan-outbox", "unreadable", bad)
        assert letter.payload == b'{"kind": "plan", "v": 99}'
        assert any(line[2].startswith(f"Message set aside (dead letter {letter.id}): plan request set aside:")
                   for line in await event_lines(api.pool, bad))
        await settled(api.pool, good, status="CHECK_COMPLETE", timeout=30)
        assert await _by_request(api.pool, good, request.request_id) is not None


async def test_a_batch_that_fails_as_a_whole_steps_its_items_one_by_one(
        settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    # As if one item's data broke the batch's shared work: the others must not fail with it
    # (given up on together, after GIVE_UP_AFTER tries), and none may retry for ever.
    real = batch.step_batch

    async def breaks_with_company(ctx: WorkerContext, items: list[Arrival]) -> batch.BatchResult:
        if len(items) > 1:
            raise RuntimeError("one item broke the batch")
        return await real(ctx, items)
    monkeypatch.setattr(batch, "step_batch", breaks_with_company)
    template = hot({f"r{i}": {"type": "OS::Heat::TestResource", "properties": {"value": str(i)}}
                    for i in range(6)})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="batched",
                                             stack_request=StackRequest(template=template))
        done = await settled(api.pool, made.id, timeout=30)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
