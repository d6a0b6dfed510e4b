"""The observer: what the cloud shows differing from the records is reported, once per change.

A stack of a server and a port is made on the simulator by a planner and a worker in this
process; then the cloud is changed behind Ember's back (the chaos API, or openstacksdk as an
operator would) and the observer's passes (:func:`services.observer.sweep.sweep_once`) list
it, through the same openstacksdk edge the worker uses. The records are read back through
the api's ``GET .../drift`` and the stack's events.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from libs import operations
from libs.cloud import sdk
from libs.cloud.caller import CloudTarget
from libs.cloud.targets import target_for
from libs.config import CloudProject as ProjectCloud
from libs.config import CloudSettings, Settings
from libs.db import services
from libs.engine.observe_schedule import Intervals, Schedule
from libs.messaging.payloads import DriftNotice, decode
from libs.resources.registry import default_registry
from libs.runtime import Runtime, open_runtime
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from services.api.app import make_app
from services.notifier.main import body as notifier_body
from services.observer.main import body as observer_body
from services.observer.sweep import Observer, Pass, sweep_once
from tests.cloud.support import Conn
from tests.integration.api_support import Client, MakeClient
from tests.integration.cloud_support import Sim, simulated_cloud
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually

pytestmark = pytest.mark.slow

TEMPLATE = hot({
    "p": {"type": "OS::Neutron::Port", "properties": {"network": "private", "name": "watched-port"}},
    "web": {"type": "OS::Nova::Server", "properties": {
        "name": "web-1", "flavor": "m1.tiny", "image": "cirros", "metadata": {"role": "web"},
        "networks": [{"port": {"get_resource": "p"}}]}},
})


@dataclasses.dataclass(frozen=True)
class _World:
    sim: Sim
    engine: Runtime
    api: Client
    settings: Settings


@pytest.fixture
async def world(settings: Settings, database_url: str, tmp_path: Path,
                aiohttp_client: MakeClient) -> AsyncIterator[_World]:
    async with simulated_cloud(database_url, tmp_path, SimSettings(boot_seconds=0.2)) as sim:
        with_cloud = dataclasses.replace(settings, cloud=sim.settings(), observe_interval=0.3)
        async with engine(with_cloud) as rt:
            yield _World(sim, rt, await aiohttp_client(make_app(with_cloud)), with_cloud)


async def _made(world: _World, name: str = "watched", project: str = "demo",
                convergence: dict[str, Any] | None = None, template: dict[str, Any] = TEMPLATE
                ) -> dict[str, str]:
    """A stack made and complete: its resources' physical ids by name."""
    rt = world.engine
    environment = {"convergence": convergence} if convergence is not None else None
    asked = StackRequest(template=template, environment=environment)
    made = await operations.create_stack(rt.pool, rt.bus, project=project, name=name, stack_request=asked,
                                         registry=default_registry())
    done = await settled(rt.pool, made.id, timeout=60)
    assert done.stack_status == "CREATE_COMPLETE", done.status_reason
    rows = await resource_rows(rt.pool, made.id)
    return {"stack_id": str(made.id), **{n: str(r.physical_id) for n, r in rows.items()}}


@contextlib.asynccontextmanager
async def _observer(world: _World, cloud: CloudSettings | None = None, heal_limit: int = 3
                    ) -> AsyncIterator[Observer]:
    async with sdk.opened(cloud or world.settings.cloud) as caller:
        assert caller is not None
        yield Observer(holder=uuid.uuid4(), pool=world.engine.pool, caller=caller,
                       cloud=cloud or world.settings.cloud, registry=default_registry(),
                       intervals=Intervals(0.3),
                       bus=world.engine.bus, heal_limit=heal_limit)


async def _first_pass(ob: Observer) -> Pass:
    """A pass to which every listing is due, as to a newly started observer (Observer.schedule
    otherwise lists a type of a project again only once its interval has passed)."""
    return await sweep_once(dataclasses.replace(ob, schedule=Schedule()))


async def _drift(world: _World, project: str, name: str, stack_id: str) -> list[dict[str, Any]]:
    async with world.api.get(f"/v1/{project}/stacks/{name}/{stack_id}/drift") as r:
        assert r.status == 200, await r.text()
        body: list[dict[str, Any]] = (await r.json())["drift"]
        return body


def _async(probe: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return probe()
    return run


async def _drift_events(world: _World, stack_id: str) -> list[tuple[str, str, str]]:
    return [e for e in await event_lines(world.engine.pool, uuid.UUID(stack_id)) if "drift" in e[2]]


async def _by_hand(world: _World, act: Callable[[Conn], object]) -> None:
    """What an operator does with openstacksdk (in a thread: the simulator answers on this loop)."""
    await asyncio.to_thread(lambda: act(world.sim.connect()))


async def test_a_server_deleted_behind_embers_back_is_reported_once(world: _World) -> None:
    ids = await _made(world)
    async with _observer(world) as ob:
        quiet = await _first_pass(ob)
        # Every listed type is one call for the project, never one per resource.
        assert (quiet.compared, quiet.list_calls, quiet.opened) == (2, 2, 0)
        assert await _drift(world, "demo", "watched", ids["stack_id"]) == []

        await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")
        seen = await _first_pass(ob)
        assert (seen.opened, seen.closed) == (1, 0)
        [record] = await _drift(world, "demo", "watched", ids["stack_id"])
        assert {k: record[k] for k in ("resource_name", "kind", "fields", "resolved_at", "action_taken")} == {
            "resource_name": "web", "kind": "gone", "fields": [], "resolved_at": None,
            "action_taken": "reported"}
        assert record["detected_at"]
        # Seen again on every pass, recorded once.
        again = await _first_pass(ob)
        assert (again.opened, again.closed) == (0, 0)
        assert len(await _drift(world, "demo", "watched", ids["stack_id"])) == 1
    assert await _drift_events(world, ids["stack_id"]) == [
        ("web", "CHECK_FAILED", "Resource drift detected: web is gone from the cloud")]
    # Reported, nothing more: the record of the resource is as it was.
    rows = await resource_rows(world.engine.pool, uuid.UUID(ids["stack_id"]))
    assert (rows["web"].action, rows["web"].status, rows["web"].physical_id) == (
        "CREATE", "COMPLETE", ids["web"])


async def test_a_listing_comes_again_at_its_stacks_interval_else_its_types_else_the_default(
        world: _World) -> None:
    cloud = dataclasses.replace(world.settings.cloud, projects=(
        *world.settings.cloud.projects, ProjectCloud("ops", "simcloud-admin")))
    world_ops = dataclasses.replace(world, settings=dataclasses.replace(world.settings, cloud=cloud))
    await _made(world_ops, "slow", "ops")
    await _made(world_ops, "fast", "demo", convergence={"interval": 1})
    async with _observer(world_ops, cloud) as made:
        ob = dataclasses.replace(made, intervals=Intervals(60.0, {"OS::Neutron::Port": 1.0}))
        server, port = "OS::Nova::Server", "OS::Neutron::Port"
        demo, ops = target_for(cloud, "demo"), target_for(cloud, "ops")
        first = await sweep_once(ob)
        assert set(first.listed) == {(demo, port), (demo, server), (ops, port), (ops, server)}
        assert (await sweep_once(ob)).listed == []  # nothing is due again yet
        listed = collections.Counter[tuple[CloudTarget, str]]()

        async def each_listed_again() -> bool:
            listed.update((await sweep_once(ob)).listed)
            return all(listed[k] >= 2 for k in ((demo, server), (demo, port), (ops, port)))
        await eventually(each_listed_again, timeout=15, interval=0.2, what="the short intervals' listings")
        # The servers of ops: no stack there asks for an interval, nor is one set for the type: 60 s.
        assert listed[(ops, server)] == 0


async def test_a_change_by_hand_is_reported_per_field_and_closed_once_it_is_undone(world: _World) -> None:
    ids = await _made(world)
    async with _observer(world) as ob:
        await _by_hand(world, lambda c: c.compute.update_server(ids["web"], name="renamed"))
        await _by_hand(world, lambda c: c.compute.set_server_metadata(ids["web"], role="db"))
        assert (await _first_pass(ob)).opened == 1
        [changed] = await _drift(world, "demo", "watched", ids["stack_id"])
        assert (changed["kind"], changed["fields"]) == ("changed", ["metadata", "name"])

        # One field put back: the drift is another one now (the old record closed, a new one open).
        await _by_hand(world, lambda c: c.compute.update_server(ids["web"], name="web-1"))
        assert ((p := await _first_pass(ob)).opened, p.closed) == (1, 1)
        first, second = await _drift(world, "demo", "watched", ids["stack_id"])
        assert first["resolved_at"] is not None and second["resolved_at"] is None
        assert second["fields"] == ["metadata"]

        await _by_hand(world, lambda c: c.compute.set_server_metadata(ids["web"], role="web"))
        assert ((p := await _first_pass(ob)).opened, p.closed) == (0, 1)
        records = await _drift(world, "demo", "watched", ids["stack_id"])
        assert all(r["resolved_at"] is not None for r in records)
    assert await _drift_events(world, ids["stack_id"]) == [
        ("web", "CHECK_FAILED", "Resource drift detected: web changed outside Ember: metadata, name"),
        ("web", "CHECK_FAILED", "Resource drift detected: web changed outside Ember: metadata"),
        ("web", "CHECK_COMPLETE", "Resource drift resolved: web agrees with the cloud again")]


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
async def test_a_server_put_in_error_and_a_deleted_port_are_reported(world: _World) -> None:
    ids = await _made(world)
    await world.sim.chaos("POST", f"/servers/{ids['web']}/error")
    await _by_hand(world, lambda c: c.network.delete_port(ids["p"]))
    async with _observer(world) as ob:
        assert (await _first_pass(ob)).opened == 2
    records = {r["resource_name"]: r for r in await _drift(world, "demo", "watched", ids["stack_id"])}
    assert records["p"]["kind"] == "gone"
    assert records["web"]["kind"] == "error"
    assert records["web"]["detail"].startswith('Went to status ERROR due to "Message: '), records["web"]


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
async def test_an_update_under_way_is_not_drift_and_a_replaced_resource_closes_its_record(
        world: _World) -> None:
    ids = await _made(world)
    rt = world.engine
    async with _observer(world) as ob:
        await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")
        assert (await _first_pass(ob)).opened == 1
        # The user replaces the server (new user data, to be replaced): its row is replaced, so its
        # record closes.
        template = hot({**TEMPLATE["resources"], "web": {**TEMPLATE["resources"]["web"], "properties": {
            **TEMPLATE["resources"]["web"]["properties"], "user_data": "two",
            "user_data_update_policy": "REPLACE"}}})
        stack_id = uuid.UUID(ids["stack_id"])
        await operations.update_stack(rt.pool, rt.bus, await stack_row(rt.pool, stack_id),
                                      stack_request=StackRequest(template=template))
        done = await settled(rt.pool, stack_id, timeout=60)
        assert done.stack_status == "UPDATE_COMPLETE", done.status_reason
        after = await _first_pass(ob)
        assert (after.opened, after.closed, after.compared) == (0, 1, 2)
        assert (await _first_pass(ob)).closed == 0  # closed once, with one event
    [record] = await _drift(world, "demo", "watched", ids["stack_id"])
    assert record["resolved_at"] is not None
    assert (await _drift_events(world, ids["stack_id"]))[-1] == (
        "web", "CHECK_COMPLETE", "Resource drift resolved: web was made again")


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
async def test_two_observers_share_the_cloud_projects_and_one_stopped_hands_its_share_on(
        world: _World) -> None:
    # Two Ember projects in two cloud projects (the admin entry is another project of the cloud).
    cloud = dataclasses.replace(world.settings.cloud, projects=(
        *world.settings.cloud.projects, ProjectCloud("ops", "simcloud-admin")))
    world_ops = dataclasses.replace(world, settings=dataclasses.replace(world.settings, cloud=cloud))
    await _made(world_ops, "a", "demo")
    await _made(world_ops, "b", "ops")
    rt = world.engine
    async with _observer(world_ops, cloud) as one, _observer(world_ops, cloud) as two:
        for ob in (one, two):  # both report as running observers
            async with rt.pool.acquire() as conn:
                await services.register(conn, service_id=ob.holder, service="observer", host="h",
                                        hostname="h", pid=1, topic="t", report_interval=60)
        first, second = await _first_pass(one), await _first_pass(two)
        assert (first.targets, first.held, second.held) == (2, 1, 1)
        # Each cloud project listed once in the interval: 2 types in each.
        assert (first.list_calls, second.list_calls) == (2, 2)

        # The second stops without a word (its leases run out, its heartbeat row ages): the first
        # takes its share once the lease has run out.
        async with rt.pool.acquire() as conn:
            await services.retire(conn, two.holder)

        async def both_held() -> Pass | None:
            done = await _first_pass(one)
            return done if done.held == 2 else None
        taken = await eventually(both_held, timeout=10, interval=0.1, what="the share handed on")
        assert taken.list_calls == 4


async def test_the_observer_service_reports_a_lost_server_within_an_interval(world: _World) -> None:
    ids = await _made(world)
    notices: list[DriftNotice] = []

    async def collect(msg: Any) -> None:
        notice = decode(msg.data)
        assert isinstance(notice, DriftNotice)
        notices.append(notice)

    bus = world.engine.bus
    sub = await bus.nc.subscribe(f"{bus.names.prefix}.drift.demo.{ids['stack_id']}", cb=collect)
    try:
        async with open_runtime(world.settings, "observer") as rt, observer_body(rt), \
                open_runtime(world.settings, "notifier") as nrt, notifier_body(nrt):
            await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")

            async def reported() -> list[dict[str, Any]] | None:
                return await _drift(world, "demo", "watched", ids["stack_id"]) or None
            # The interval is 0.3 s: a few intervals at most, however busy this machine is.
            [record] = await eventually(reported, timeout=15, interval=0.1, what="the drift record")
            # And it goes out on NATS, on the stack's drift subject, once.
            await eventually(_async(lambda: notices or None), timeout=15, what="the drift notice")
    finally:
        await sub.unsubscribe()
    assert (record["resource_name"], record["kind"]) == ("web", "gone")
    [notice] = notices
    assert (notice.resource_name, notice.drift, notice.action_taken, notice.resolved, notice.stack_name) == (
        "web", "gone", "reported", False, "watched")
    # Its lease was given up on the way out: another observer takes the project at once.
    async with world.engine.pool.acquire() as conn:
        assert await conn.fetchval("SELECT count(*) FROM observer_leases") == 0


async def _healed(world: _World, stack_id: str) -> None:
    """The heal's converge traversal ran to its end."""
    done = await settled(world.engine.pool, uuid.UUID(stack_id), timeout=60)
    lines = await event_lines(world.engine.pool, uuid.UUID(stack_id))
    assert done.stack_status == "UPDATE_COMPLETE", (done.status_reason, lines)


async def test_under_heal_a_lost_server_is_made_again_on_its_port(world: _World) -> None:
    ids = await _made(world, convergence={"policy": "heal"})
    async with _observer(world) as ob:
        await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")
        healing = await _first_pass(ob)
        assert (healing.opened, healing.heals) == (1, 1)
        await _healed(world, ids["stack_id"])
        rows = await resource_rows(world.engine.pool, uuid.UUID(ids["stack_id"]))
        made_again = str(rows["web"].physical_id)
        assert made_again != ids["web"]
        # The new server is on the template's port, and the record is closed as healed.
        ports = await asyncio.to_thread(lambda: [
            i.port_id for i in world.sim.connect().compute.server_interfaces(made_again)])
        assert ports == [ids["p"]]
        after = await _first_pass(ob)
        assert (after.opened, after.heals) == (0, 0)
    [record] = await _drift(world, "demo", "watched", ids["stack_id"])
    assert (record["kind"], record["action_taken"]) == ("gone", "healed")
    assert record["resolved_at"] is not None
    assert await _drift_events(world, ids["stack_id"]) == [
        ("web", "CHECK_FAILED", "Resource drift detected: web is gone from the cloud; healing"),
        ("web", "CHECK_COMPLETE", "Resource drift resolved: web was made again")]


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
async def test_under_heal_a_scaling_group_keeps_its_members_a_lost_one_made_again(world: _World) -> None:
    group = hot({"group": {"type": "OS::Heat::AutoScalingGroup", "properties": {
        "min_size": 2, "max_size": 3, "resource": {"type": "OS::Nova::Server", "properties": {
            "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}]}}}}})
    ids = await _made(world, "grouped", convergence={"policy": "heal"}, template=group)
    nested = uuid.UUID(ids["group"])  # the group's members are its nested stack's resources
    before = await resource_rows(world.engine.pool, nested)
    assert len(before) == 2
    lost = sorted(before)[0]
    await world.sim.chaos("POST", f"/servers/{before[lost].physical_id}/delete")
    async with _observer(world) as ob:
        healing = await _first_pass(ob)
        assert (healing.opened, healing.heals) == (1, 1)  # the nested stack converged on its own
        await _healed(world, str(nested))
    after = await resource_rows(world.engine.pool, nested)
    assert sorted(after) == sorted(before)
    assert after[lost].physical_id != before[lost].physical_id
    servers = await asyncio.to_thread(lambda: {s.id: s.status for s in world.sim.connect().compute.servers()})
    assert {servers.get(str(r.physical_id)) for r in after.values()} == {"ACTIVE"}
    root = await stack_row(world.engine.pool, uuid.UUID(ids["stack_id"]))
    assert root.stack_status == "CREATE_COMPLETE"


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
@pytest.mark.parametrize("act", ["error", "stop"])  # gone ERROR; stopped (SHUTOFF) by hand
async def test_under_heal_a_server_in_error_or_stopped_is_replaced(world: _World, act: str) -> None:
    # On a network (Nova makes its port): a port the template gives stays bound to a server in
    # ERROR (Nova detaches nothing from one, and Heat leaves it), so its replacement could not boot.
    on_network = hot({"web": {"type": "OS::Nova::Server", "properties": {
        "name": "web-1", "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}]}}})
    ids = await _made(world, convergence={"policy": "heal"}, template=on_network)
    async with _observer(world) as ob:
        await world.sim.chaos("POST", f"/servers/{ids['web']}/{act}")
        assert (await _first_pass(ob)).heals == 1
        await _healed(world, ids["stack_id"])
        rows = await resource_rows(world.engine.pool, uuid.UUID(ids["stack_id"]))
        assert rows["web"].physical_id != ids["web"]
        servers = await asyncio.to_thread(lambda: {
            s.id: s.status for s in world.sim.connect().compute.servers() if s.name == "web-1"})
        assert servers == {rows["web"].physical_id: "ACTIVE"}  # the one in ERROR (or stopped) is gone
        await _first_pass(ob)
    [record] = await _drift(world, "demo", "watched", ids["stack_id"])
    assert (record["kind"], record["action_taken"]) == ("error", "healed")


async def test_under_heal_a_change_by_hand_is_reverted_accepted_or_ignored_per_field(world: _World) -> None:
    ids = await _made(world, convergence={"policy": "heal", "resources": {
        "web": {"fields": {"name": "ignore"}}, "p": {"fields": {"name": "accept"}}}})
    async with _observer(world) as ob:
        await _by_hand(world, lambda c: c.compute.update_server(ids["web"], name="renamed"))
        await _by_hand(world, lambda c: c.compute.set_server_metadata(ids["web"], role="db"))
        await _by_hand(world, lambda c: c.network.update_port(ids["p"], name="renamed-port"))
        first = await _first_pass(ob)
        assert (first.opened, first.heals) == (2, 1)
        await _healed(world, ids["stack_id"])
        server = await asyncio.to_thread(lambda: world.sim.connect().compute.get_server(ids["web"]))
        # The metadata is put back, in place; the name was ignored; the port's name accepted.
        assert (server.metadata["role"], server.name) == ("web", "renamed")
        rows = await resource_rows(world.engine.pool, uuid.UUID(ids["stack_id"]))
        assert rows["web"].physical_id == ids["web"]
        assert rows["p"].properties is not None and rows["p"].properties["name"] == "renamed-port"
        port = await asyncio.to_thread(lambda: world.sim.connect().network.get_port(ids["p"]))
        assert port.name == "renamed-port"
        quiet = await _first_pass(ob)
        assert (quiet.opened, quiet.heals) == (0, 0)
    records = {r["resource_name"]: r for r in await _drift(world, "demo", "watched", ids["stack_id"])}
    assert (records["web"]["fields"], records["web"]["action_taken"]) == (["metadata"], "healed")
    assert (records["p"]["fields"], records["p"]["action_taken"]) == (["name"], "accepted")
    assert all(r["resolved_at"] is not None for r in records.values())


async def test_under_heal_past_the_limit_the_stack_fails_saying_what_was_tried(world: _World) -> None:
    ids = await _made(world, convergence={"policy": "heal"})
    async with _observer(world, heal_limit=0) as ob:
        await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")
        done = await _first_pass(ob)
        assert (done.opened, done.heals) == (1, 0)
    [record] = await _drift(world, "demo", "watched", ids["stack_id"])
    assert record["action_taken"] == "reported: heal limit reached"
    reason = ("Resource CHECK failed: web is gone from the cloud; healed 0 time(s) within the last hour"
              " (EMBER_HEAL_LIMIT 0): not healed again, left for an operator")
    assert (await event_lines(world.engine.pool, uuid.UUID(ids["stack_id"])))[-2:] == [
        ("web", "CHECK_FAILED",
         "Resource drift detected: web is gone from the cloud; not healed: heal limit reached"),
        ("watched", "CHECK_FAILED", reason)]  # the stack's own event: out on NATS and to webhooks
    stack = await stack_row(world.engine.pool, uuid.UUID(ids["stack_id"]))
    assert (stack.stack_status, stack.status_reason) == ("CHECK_FAILED", reason)


@pytest.mark.slow_ci  # test.sh keeps the core cases of this module; .ci/run runs this one
async def test_a_heal_that_fails_is_recorded_as_such_and_not_asked_again(world: _World) -> None:
    ids = await _made(world, convergence={"policy": "heal"})
    async with _observer(world) as ob:
        await world.sim.chaos("POST", f"/servers/{ids['web']}/delete")
        await world.sim.chaos("PUT", "/settings", {"error_share": 1.0})  # the server made again fails
        assert (await _first_pass(ob)).heals == 1
        done = await settled(world.engine.pool, uuid.UUID(ids["stack_id"]), timeout=90)
        assert done.stack_status == "UPDATE_FAILED", done.status_reason
        again = await _first_pass(ob)
        assert (again.opened, again.heals) == (0, 0)  # the same drift: no second heal of it
    [record] = await _drift(world, "demo", "watched", ids["stack_id"])
    assert (record["kind"], record["action_taken"], record["resolved_at"]) == ("gone", "heal failed", None)
