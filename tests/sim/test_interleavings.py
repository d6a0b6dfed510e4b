"""Interleavings the engine must survive, each under many seeded delivery orders.

Update during create, delete during update, a crash between a cloud call and
its record, two workers on one resource, and a stale traversal's late message.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any, cast

import asyncpg
import pytest
import yaml

from libs import operations
from libs.db import events, resources, stacks
from libs.db.pool import create_pool
from libs.messaging.bus import Bus
from libs.messaging.payloads import WorkItem
from libs.template.request import StackRequest
from tests.sim.harness import Message, Simulation

SEEDS = range(8)


def _template(value: str, names: tuple[str, ...] = ("a", "b", "c", "d")) -> dict[str, Any]:
    res: dict[str, Any] = {}
    for i, name in enumerate(names):
        props: dict[str, Any] = {"value": value}
        if i:
            props["value"] = {"list_join": ["/", [value, {"get_attr": [names[i - 1], "output"]}]]}
        res[name] = {"type": "OS::Heat::TestResource", "properties": props}
    return {"heat_template_version": "2016-10-14", "resources": res}


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with create_pool(database_url, min_size=2, max_size=8) as created:
        yield created


async def _stack(pool: asyncpg.Pool, stack_id: Any) -> stacks.StackRow:
    async with pool.acquire() as conn:
        row = await stacks.get(conn, stack_id)
    assert row is not None
    return row


async def _current(pool: asyncpg.Pool, stack_id: Any) -> dict[str, resources.ResourceRow]:
    async with pool.acquire() as conn:
        return {r.name: r for r in await resources.for_stack(conn, stack_id) if r.is_current}


async def _all_rows(pool: asyncpg.Pool, stack_id: Any) -> list[resources.ResourceRow]:
    async with pool.acquire() as conn:
        return await resources.for_stack(conn, stack_id)


def _bus(sim: Simulation) -> Bus:
    return cast(Bus, sim.bus)


async def _create(sim: Simulation, pool: asyncpg.Pool, name: str, template: dict[str, Any]) -> Any:
    row = await operations.create_stack(pool, _bus(sim), project="sim", name=name,
                                        stack_request=StackRequest(template=template))
    return row.id


def _work(m: Message) -> bool:
    return isinstance(m.payload, WorkItem)


@pytest.mark.parametrize("seed", SEEDS)
async def test_update_during_create(pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "udc", _template("v1"))
    for _ in range(sim.rng.randint(1, 5)):  # part of the create happens
        await sim.deliver()
    await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                  stack_request=StackRequest(template=_template("v2")))
    await sim.run()
    final = await _stack(pool, stack_id)
    assert final.stack_status == "UPDATE_COMPLETE", (final.status_reason, sim.log)
    rows = await _current(pool, stack_id)
    assert rows["d"].properties is not None and rows["d"].properties["value"] == "v2/v2/v2/v2"
    assert all(n == 1 for n in sim.cloud.creates.values()), sim.cloud.creates
    assert len(await _all_rows(pool, stack_id)) == 4  # nothing replaced or left behind


@pytest.mark.parametrize("seed", SEEDS)
async def test_delete_during_update(pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "ddu", _template("v1"))
    await sim.run()
    await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                  stack_request=StackRequest(template=_template("v2", ("a", "b", "e"))))
    for _ in range(sim.rng.randint(1, 6)):
        await sim.deliver()
    await operations.delete_stack(pool, _bus(sim), await _stack(pool, stack_id))
    await sim.run()
    final = await _stack(pool, stack_id)
    assert final.stack_status == "DELETE_COMPLETE", (final.status_reason, sim.log)
    assert await _all_rows(pool, stack_id) == []


@pytest.mark.parametrize("seed", SEEDS)
async def test_crash_between_cloud_call_and_its_record(pool: asyncpg.Pool, nats_prefix: str,
                                                       seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    victim = sim.rng.choice("abcd")
    sim.cloud.crash_after_start.add((victim, "CREATE"))
    stack_id = await _create(sim, pool, "crash", _template("v1"))
    await sim.run()
    final = await _stack(pool, stack_id)
    assert final.stack_status == "CREATE_COMPLETE", (final.status_reason, sim.log)
    assert any("SimulatedCrash" in line for line in sim.log)
    # The create reached the cloud twice (before and after the crash) for one resource
    # with one physical id, and one recorded row; every event written exactly once.
    rows = await _current(pool, stack_id)
    assert len({r.physical_id for r in rows.values()}) == 4
    async with pool.acquire() as conn:
        lines = [(e.resource_name, e.resource_status) for e in await events.for_stack(conn, stack_id)]
    assert sorted(set(lines)) == sorted(lines)


@pytest.mark.parametrize("seed", SEEDS)
async def test_two_workers_on_one_resource(pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "twice", _template("v1", ("a",)))
    await sim.deliver()  # the plan
    (msg,) = [m for m in sim.bus.queue if _work(m)]
    # Two workers get the same node at the same moment (a redelivery racing the first).
    other = Simulation(pool, nats_prefix, seed)
    other.bus.queue.append(Message(msg.subject, msg.payload, None))
    results = await asyncio.gather(sim.deliver(_work), other.deliver(_work))
    assert list(results) == [True, True]
    await sim.run()
    await other.run()
    final = await _stack(pool, stack_id)
    assert final.stack_status == "CREATE_COMPLETE", (sim.log, other.log)
    assert sum(sim.cloud.creates.values()) + sum(other.cloud.creates.values()) == 1
    async with pool.acquire() as conn:
        lines = [(e.resource_name, e.resource_status) for e in await events.for_stack(conn, stack_id)]
    assert lines.count(("a", "CREATE_COMPLETE")) == 1


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_stale_traversals_late_message_changes_nothing(pool: asyncpg.Pool, nats_prefix: str,
                                                               seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "late", _template("v1"))
    await sim.run()
    first = await _stack(pool, stack_id)
    await operations.update_stack(pool, _bus(sim), first,
                                  stack_request=StackRequest(template=_template("v2")))
    await sim.run()
    before = {n: (r.version, r.properties) for n, r in (await _current(pool, stack_id)).items()}
    # A message of the first (now stale) traversal arrives late.
    stale = WorkItem(stack_id=str(stack_id), traversal_id=str(first.current_traversal),
                     node=f"{next(iter((await _current(pool, stack_id)).values())).id}:u")
    sim.bus.queue.append(Message("late", stale, None))
    await sim.run()
    after = {n: (r.version, r.properties) for n, r in (await _current(pool, stack_id)).items()}
    assert after == before
    assert (await _stack(pool, stack_id)).stack_status == "UPDATE_COMPLETE"


@pytest.mark.parametrize("seed", SEEDS[:4])
async def test_converge_repairs_drift_that_a_plain_update_does_not_see(pool: asyncpg.Pool, nats_prefix: str,
                                                                      seed: int) -> None:
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "conv", _template("v1"))
    await sim.run()
    created = await _current(pool, stack_id)
    sim.cloud.drift["conv/b"] = {"value": "tampered"}
    sim.cloud.gone.add("conv/d")

    # The same template without converge: nothing is compared with the cloud.
    await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                  stack_request=StackRequest(template=_template("v1")))
    await sim.run()
    assert (await _stack(pool, stack_id)).stack_status == "UPDATE_COMPLETE"
    rows = await _current(pool, stack_id)
    assert {n: (r.id, r.action) for n, r in rows.items()} == {n: (r.id, "CREATE") for n, r in created.items()}

    # With converge: b is updated back to the template, d (gone) is replaced, a and c are left alone.
    await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                  stack_request=StackRequest(template=_template("v1")), converge=True)
    await sim.run()
    final = await _stack(pool, stack_id)
    assert final.stack_status == "UPDATE_COMPLETE", (final.status_reason, sim.log)
    rows = await _current(pool, stack_id)
    assert rows["b"].action == "UPDATE" and rows["b"].id == created["b"].id
    assert rows["d"].action == "CREATE" and rows["d"].id != created["d"].id
    assert rows["a"].action == rows["c"].action == "CREATE"
    assert sim.cloud.creates["conv/d"] == 2 and not sim.cloud.drift and not sim.cloud.gone
    assert len(await _all_rows(pool, stack_id)) == 4  # the gone d's old row was cleaned up


_SLOW_CHILD = yaml.safe_dump({
    "heat_template_version": "2016-10-14",
    "parameters": {"word": {"type": "string"}, "secs": {"type": "number", "default": 0}},
    "resources": {name: {"type": "OS::Heat::TestResource",
                         "properties": {"value": {"get_param": "word"},
                                        "action_wait_secs": {"update": {"get_param": "secs"}}}}
                  for name in ("x", "y")},
})


def _nesting(word: str, secs: float = 0) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {
        "nest": {"type": "OS::Heat::Stack",
                 "properties": {"template": _SLOW_CHILD, "parameters": {"word": word, "secs": secs}}},
        "after": {"type": "OS::Heat::TestResource", "depends_on": "nest", "properties": {"value": word}}}}


@pytest.mark.parametrize("seed", SEEDS)
async def test_updates_and_a_delete_over_a_nested_update_that_would_take_an_hour(
        pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    # Every queued message is delivered over and over while the nested resources "wait": a
    # delete that waited for them would never settle; the newer update preempts, the delete cancels.
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "nested", _nesting("one"))
    await sim.run()
    created = await _stack(pool, stack_id)
    assert created.stack_status == "CREATE_COMPLETE", created.status_reason
    child_id = (await _current(pool, stack_id))["nest"].physical_id
    for word in ("two", "three"):
        await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                      stack_request=StackRequest(template=_nesting(word, 3600)))
        for _ in range(sim.rng.randint(1, 12)):
            await sim.deliver()
    await operations.delete_stack(pool, _bus(sim), await _stack(pool, stack_id))
    await sim.run(limit=3000)
    final = await _stack(pool, stack_id)
    assert final.stack_status == "DELETE_COMPLETE", (final.status_reason, sim.log[-30:])
    assert await _all_rows(pool, stack_id) == []
    child = await _stack(pool, uuid.UUID(child_id or ""))
    assert child.stack_status == "DELETE_COMPLETE" and await _all_rows(pool, child.id) == []


def _rolling(value: str) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {"group": {
        "type": "OS::Heat::ResourceGroup",
        "properties": {"count": 4, "resource_def": {"type": "OS::Heat::TestResource",
                                                    "properties": {"value": value}}},
        "update_policy": {"rolling_update": {"max_batch_size": 1, "min_in_service": 3}}}}}


@pytest.mark.parametrize("seed", SEEDS)
async def test_a_step_that_dies_as_it_starts_a_batch_still_rolls_every_member(
        pool: asyncpg.Pool, nats_prefix: str, seed: int) -> None:
    # The worker dies right after committing a batch's nested update, before publishing its plan:
    # the batch it recorded and the nested update it asked for are one, so the redelivered step
    # waits for that batch (planned by the sweep) and goes on to the next, to the last member.
    sim = Simulation(pool, nats_prefix, seed)
    stack_id = await _create(sim, pool, "rolling", _rolling("a"))
    await sim.run()
    assert (await _stack(pool, stack_id)).stack_status == "CREATE_COMPLETE"
    await operations.update_stack(pool, _bus(sim), await _stack(pool, stack_id),
                                  stack_request=StackRequest(template=_rolling("b")))
    sim.bus.plans_before_crash = seed % 4  # the first publish is the first batch's
    await sim.run(limit=3000)
    final = await _stack(pool, stack_id)
    assert final.stack_status == "UPDATE_COMPLETE", (final.status_reason, sim.log[-30:])
    assert any("SimulatedCrash" in line for line in sim.log), "the publisher never died"
    members = await _current(pool, uuid.UUID((await _current(pool, stack_id))["group"].physical_id or ""))
    assert {n: r.properties["value"] for n, r in members.items() if r.properties} == {
        str(i): "b" for i in range(4)}
