"""The Call effect through the real planner and worker: a plugin's cloud calls made by the worker.

The plugin below asks for calls as data; :class:`~tests.sim.memory_cloud.MemoryCloud`
(a ``CloudCaller`` with a cloud of its own in memory) answers them. What is
checked: servers made and deleted with their ids recorded, a delayed Call made on
redelivery, the calls of a batch made together, no advisory lock held while the
cloud answers, a worker dying right after a create call making no second server,
and a worker with no cloud failing the resource with a clear reason.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, cast

import asyncpg
import pytest

from libs import operations
from libs.cloud.caller import CloudTarget
from libs.cloud.calls import CloudCall, Service
from libs.config import CloudSettings
from libs.db import resources, stacks
from libs.db.pool import create_pool
from libs.engine.status import Action
from libs.messaging.bus import Bus
from libs.messaging.payloads import PlanRequest, WorkItem
from libs.resources.base import OBSERVE_KEY, ResourceType
from libs.resources.registry import Registry, default_registry
from libs.resources.steps import Call, Done, Failed, Observed, StepContext, StepResult
from libs.template.request import StackRequest
from services.worker import pending
from services.worker.steps import Steps
from tests.sim.harness import Simulation
from tests.sim.memory_cloud import MemoryCloud


def _server_call(key: str, method: str, *args: Any, **kwargs: Any) -> CloudCall:
    return CloudCall(key, Service.COMPUTE, method, args, kwargs)


class CloudServer(ResourceType):
    """A server made by calls: created (or found by its tag after a lost answer), polled, deleted."""

    type_name = "Test::Cloud::Server"

    def start_create(self, ctx: StepContext) -> StepResult:
        return Call((_server_call("made", "create_server", name=ctx.cloud_tag),))

    def start_delete(self, ctx: StepContext) -> StepResult:
        if ctx.physical_id is None:
            return Done()
        return Call((_server_call("deleted", "delete_server", ctx.physical_id),))

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        answers = ctx.answers
        if action is Action.DELETE:
            if "deleted" in answers and (answers["deleted"].ok or answers["deleted"].not_found):
                return Done()
            return self.start_delete(ctx)  # a lost answer: deleting again finds it gone, or deletes it
        if "made" in answers or "found" in answers:
            made = answers.get("made") or answers["found"]
            if not made.ok:
                assert made.error is not None
                return Failed(made.error.message)
            found = made.value if isinstance(made.value, dict) else (made.value or [None])[0]
            if found is None:
                return self.start_create(ctx)  # nothing was made before the crash: make it now
            return self._poll(str(found["id"]))
        if "shown" in answers:
            shown = answers["shown"]
            if shown.ok and shown.value["status"] == "ACTIVE":
                return Done()
            if not shown.ok:
                assert shown.error is not None
                return Failed(shown.error.message)
            return self._poll(ctx.physical_id or "", delay=0.05)
        # No answers: the calls were made but their answers lost (a crash). Find what they made.
        if ctx.physical_id is not None:
            return self._poll(ctx.physical_id)
        return Call((_server_call("found", "servers", name=ctx.cloud_tag),))

    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        return _server_call(OBSERVE_KEY, "get_server", ctx.physical_id) if ctx.physical_id else None

    def observe(self, ctx: StepContext) -> Observed | None:
        seen = ctx.answers.get(OBSERVE_KEY)
        return Observed(gone=True) if seen is not None and seen.not_found else None

    def _poll(self, server_id: str, delay: float = 0.0) -> StepResult:
        return Call((_server_call("shown", "get_server", server_id),), delay=delay, physical_id=server_id)


def _registry() -> Registry:
    registry = default_registry()
    registry.register(CloudServer)
    return registry


def _template(count: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14",
            "resources": {f"s{i}": {"type": CloudServer.type_name} for i in range(count)}}


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with create_pool(database_url, min_size=2, max_size=8) as created:
        yield created


def _sim(pool: asyncpg.Pool, prefix: str, seed: int, cloud: MemoryCloud | None) -> Simulation:
    sim = Simulation(pool, prefix, seed)
    sim.steps = Steps(sim.rt, _registry(), batch_size=8, caller=cloud, cloud=CloudSettings(default="memory"))
    return sim


async def _create(sim: Simulation, pool: asyncpg.Pool, count: int) -> stacks.StackRow:
    return await operations.create_stack(pool, cast(Bus, sim.bus), project="sim", name="servers",
                                         stack_request=StackRequest(template=_template(count)),
                                         registry=_registry())


async def _created(pool: asyncpg.Pool, prefix: str, cloud: MemoryCloud | None, *, seed: int = 0
                   ) -> stacks.StackRow:
    """A stack of one server, created on the simulation to its end: the stack as it ended."""
    sim = _sim(pool, prefix, seed, cloud)
    made = await _create(sim, pool, 1)
    await sim.run()
    return await _stack(pool, made.id)


async def _stack(pool: asyncpg.Pool, stack_id: Any) -> stacks.StackRow:
    async with pool.acquire() as conn:
        row = await stacks.get(conn, stack_id)
    assert row is not None
    return row


async def _rows(pool: asyncpg.Pool, stack_id: Any) -> list[resources.ResourceRow]:
    async with pool.acquire() as conn:
        return await resources.for_stack(conn, stack_id)


async def _one_at_a_time(sim: Simulation) -> None:
    for _ in range(2_000):
        if not await sim.deliver():
            return
    raise AssertionError("did not settle:\n" + "\n".join(sim.log[-30:]))


@pytest.mark.parametrize("seed", range(3))
async def test_servers_are_made_and_deleted_by_the_worker_s_calls(pool: asyncpg.Pool, nats_prefix: str,
                                                                  seed: int) -> None:
    cloud = MemoryCloud(boot_polls=3)
    sim = _sim(pool, nats_prefix, seed, cloud)
    made = await _create(sim, pool, 3)
    await sim.run()
    stack = await _stack(pool, made.id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE"), stack.status_reason
    rows = await _rows(pool, made.id)
    assert cloud.creates == 3
    # Each server carries its resource's tag, and the resource its server's id.
    assert {s["name"]: s["id"] for s in cloud.servers.values()} == {
        f"ember-{made.id}-{r.id}": r.physical_id for r in rows}
    assert all(pending.KEY not in r.data for r in rows)
    # The stack's project has no entry of its own: the default one, in its own project.
    assert set(cloud.targets) == {CloudTarget("memory")}

    await operations.delete_stack(pool, cast(Bus, sim.bus), stack)
    await sim.run()
    assert cloud.servers == {}
    assert await _rows(pool, made.id) == []


async def test_converge_observes_through_one_call_and_replaces_a_server_gone(
        pool: asyncpg.Pool, nats_prefix: str) -> None:
    cloud = MemoryCloud()
    sim = _sim(pool, nats_prefix, 0, cloud)
    made = await _create(sim, pool, 2)
    await sim.run()
    gone = next(iter(cloud.servers))
    del cloud.servers[gone]  # behind the engine's back
    await operations.update_stack(pool, cast(Bus, sim.bus), await _stack(pool, made.id),
                                  stack_request=StackRequest(template=_template(2)), converge=True,
                                  registry=_registry())
    await sim.run()
    stack = await _stack(pool, made.id)
    assert (stack.action, stack.status) == ("UPDATE", "COMPLETE"), stack.status_reason
    assert cloud.calls.count("compute.get_server") >= 2  # each resource observed
    assert cloud.creates == 3  # the one gone was made again; the other was left alone
    assert sorted(r.physical_id or "" for r in await _rows(pool, made.id)) == sorted(cloud.servers)


async def test_no_lock_is_held_while_the_cloud_answers(pool: asyncpg.Pool, nats_prefix: str) -> None:
    cloud = MemoryCloud(pool, boot_polls=2)
    sim = _sim(pool, nats_prefix, 0, cloud)
    made = await _create(sim, pool, 2)
    await _one_at_a_time(sim)
    stack = await _stack(pool, made.id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE"), stack.status_reason
    assert cloud.locks_seen and set(cloud.locks_seen) == {0}


async def test_the_calls_of_a_batch_are_made_together(pool: asyncpg.Pool, nats_prefix: str) -> None:
    cloud = MemoryCloud()
    sim = _sim(pool, nats_prefix, 0, cloud)
    await _create(sim, pool, 4)
    assert await sim.deliver(lambda m: isinstance(m.payload, PlanRequest))
    assert len([m for m in sim.bus.queue if isinstance(m.payload, WorkItem)]) == 4
    assert await sim.deliver_together(4)  # one batch: four creates
    assert cloud.creates == 4
    assert cloud.most_in_flight == 4


@pytest.mark.parametrize("seed", range(3))
async def test_a_worker_dying_after_a_create_call_makes_no_second_server(
        pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    cloud = MemoryCloud()
    cloud.crash_after["create_server"] = 1
    sim = _sim(pool, nats_prefix, seed, cloud)
    made = await _create(sim, pool, 1)
    await sim.run()
    stack = await _stack(pool, made.id)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE"), stack.status_reason
    assert any("SimulatedCrash" in line for line in sim.log)
    [row] = await _rows(pool, made.id)
    assert cloud.creates == 1  # the redelivered step found it by its tag, and made nothing
    assert list(cloud.servers) == [row.physical_id]
    assert cloud.calls.count("compute.servers") == 1


async def test_server_errors_are_tried_again_before_the_plugin_sees_them(
        pool: asyncpg.Pool, nats_prefix: str) -> None:
    cloud = MemoryCloud()
    cloud.fail_next["create_server"] = pending.TRIES - 1
    stack = await _created(pool, nats_prefix, cloud)
    assert (stack.action, stack.status) == ("CREATE", "COMPLETE"), stack.status_reason
    assert cloud.calls.count("compute.create_server") == pending.TRIES
    assert cloud.creates == 1


async def test_a_cloud_that_keeps_failing_fails_the_resource_with_its_message(
        pool: asyncpg.Pool, nats_prefix: str) -> None:
    cloud = MemoryCloud()
    cloud.fail_next["create_server"] = pending.TRIES
    stack = await _created(pool, nats_prefix, cloud)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    [row] = await _rows(pool, stack.id)
    assert row.status_reason == "Exception: resources.s0: Service Unavailable"
    assert cloud.creates == 0


async def test_a_worker_with_no_cloud_fails_the_resource(pool: asyncpg.Pool, nats_prefix: str) -> None:
    stack = await _created(pool, nats_prefix, None)
    assert (stack.action, stack.status) == ("CREATE", "FAILED")
    [row] = await _rows(pool, stack.id)
    assert row.status_reason == ("ResourceFailure: resources.s0: no cloud is configured for this worker"
                                 " to call (compute.create_server)")
