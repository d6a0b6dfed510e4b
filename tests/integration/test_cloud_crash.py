"""Ember's worker against the simulated OpenStack over HTTP (the real openstacksdk), with the cloud
misbehaving: a worker killed right after Nova made a server, and a fifth of boots going ERROR.

Real PostgreSQL, nats-server, planner and worker processes; what the cloud holds is read
through openstacksdk, as an operator would.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import functools
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from libs import operations
from libs.config import Settings
from libs.db.stacks import StackRow
from libs.resources.registry import default_registry
from libs.runtime import Runtime, open_runtime
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from services.worker import pending
from tests.cloud.support import Conn
from tests.integration.cloud_support import Sim, simulated_cloud
from tests.integration.engine_support import event_lines, hot, resource_rows, settled
from tests.support import ember, eventually, terminate

pytestmark = pytest.mark.slow


class _Services:
    """A planner and workers of Ember, whose cloud is the simulator."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.start("planner")
        self.start("worker")

    def start(self, service: str) -> str:
        name = f"{service}-{len(self.procs)}"
        self.procs[name] = ember([service], self.env, self.logs / f"{name}.log")
        return name

    def kill_9(self, name: str) -> None:
        os.kill(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait()

    def stop(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is None:
                assert terminate(proc) == 0, name


@dataclasses.dataclass(frozen=True)
class _World:
    sim: Sim
    settings: Settings
    services: _Services

    def conn(self) -> Conn:
        return self.sim.connect()


@pytest.fixture
async def world(request: pytest.FixtureRequest, settings: Settings, ember_env: dict[str, str],
                database_url: str, tmp_path: Path) -> AsyncIterator[_World]:
    sim_settings: SimSettings = getattr(request, "param", SimSettings(boot_seconds=0.3, delete_seconds=0.2))
    async with simulated_cloud(database_url, tmp_path, sim_settings) as sim:
        env = {**ember_env, "OS_CLIENT_CONFIG_FILE": str(sim.clouds_yaml), "OS_CLOUD": "simcloud",
               "EMBER_CLOUD_RETRY_SECONDS": "0.05"}
        if sim_settings.error_share:
            # Boots in ERROR fail their resource at once (no create tried again: test_create_retry).
            env["EMBER_ACTION_RETRY_LIMIT"] = "0"
        services = _Services(env, tmp_path)
        try:
            yield _World(sim, dataclasses.replace(settings, cloud=sim.settings()), services)
        finally:
            services.stop()


async def _in_cloud(world: _World, stack: str) -> dict[str, set[str]]:
    """The servers, ports and volumes of ``stack`` (named after it, or on its servers) in the cloud."""
    def read() -> dict[str, set[str]]:
        conn = world.conn()
        servers = {s.id for s in conn.compute.servers() if s.name.startswith(f"{stack}-")}
        ports = {p.id for p in conn.network.ports(project_id=conn.current_project_id)
                 if str(p.name or "").startswith(f"{stack}-") or p.device_id in servers}
        volumes = {v.id for v in conn.block_storage.volumes() if str(v.name or "").startswith(f"{stack}-")}
        return {"servers": servers, "ports": ports, "volumes": volumes}
    return await asyncio.to_thread(read)


async def _empty(world: _World, stack: str) -> dict[str, set[str]]:
    async def probe() -> bool:
        return not any((await _in_cloud(world, stack)).values())
    await eventually(probe, timeout=60, interval=0.2, what=f"nothing of {stack} left in the cloud")
    return await _in_cloud(world, stack)


async def _one_server(api: Runtime, name: str) -> StackRow:
    """A stack of one server on the private network, asked for (not waited for)."""
    template = hot({"server": {"type": "OS::Nova::Server",
                               "properties": {"flavor": "m1.tiny", "image": "cirros",
                                              "networks": [{"network": "private"}]}}})
    return await operations.create_stack(api.pool, api.bus, project="demo", name=name,
                                         stack_request=StackRequest(template=template),
                                         registry=default_registry())


@pytest.mark.slow_ci  # 14 s; to keep test.sh under 15 minutes
async def test_a_worker_killed_right_after_nova_made_the_server_leaves_one_server(world: _World) -> None:
    # Nova makes the server at once, and holds its answer back: the worker is killed meanwhile.
    await world.sim.chaos("POST", "/faults", {"service": "compute", "method": "POST", "count": 1, "hold": 60})
    async with open_runtime(world.settings, "api") as api:
        made = await _one_server(api, "crash")

        async def server_made() -> set[str] | None:
            return (await _in_cloud(world, "crash"))["servers"] or None
        first = await eventually(server_made, timeout=60, interval=0.2, what="Nova made the server")
        world.services.kill_9("worker-1")
        await world.sim.chaos("DELETE", "/faults")  # the held answer goes out, to no one
        world.services.start("worker")

        done = await settled(api.pool, made.id, timeout=120)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        held = await _in_cloud(world, "crash")
        assert held["servers"] == first, "one server, the one made before the kill: adopted, not made again"
        assert (await resource_rows(api.pool, made.id))["server"].physical_id in first
        lines = await event_lines(api.pool, made.id)
        assert collections.Counter(s for n, s, _ in lines if n == "server") == {
            "CREATE_IN_PROGRESS": 1, "CREATE_COMPLETE": 1}

        await operations.delete_stack(api.pool, api.bus, done)
        await settled(api.pool, made.id, status="DELETE_COMPLETE", timeout=60)
        assert await _empty(world, "crash") == {"servers": set(), "ports": set(), "volumes": set()}


async def test_a_delete_while_nova_makes_the_server_waits_for_it_and_leaves_nothing(world: _World) -> None:
    # Nova is slow to take the create: the server exists only seconds after the call was made.
    await world.sim.chaos("POST", "/faults", {"service": "compute", "method": "POST", "count": 1, "delay": 4})
    async with open_runtime(world.settings, "api") as api:
        made = await _one_server(api, "early")

        async def creating() -> Any:
            row = (await resource_rows(api.pool, made.id)).get("server")
            kept = (row.data.get(pending.KEY) or {}) if row is not None else {}
            calls = [c["method"] for c in kept.get("calls", ())]
            return (row if kept.get("attempted") and "create_server" in calls else None)
        await eventually(creating, timeout=60, interval=0.05, what="the create_server call under way")
        assert not (await _in_cloud(world, "early"))["servers"], "Nova has not made it yet"
        await operations.delete_stack(api.pool, api.bus, made)

        await _settled(api.pool, made.id, status="DELETE_COMPLETE")

        async def landed() -> bool:
            return bool((await world.sim.chaos("GET", "/faults"))["under_way"] == 0)
        await eventually(landed, timeout=60, interval=0.1, what="Nova to have taken the slow create")
        # The delete waited for the call's answer, so it knew the server and deleted it.
        assert await _empty(world, "early") == {"servers": set(), "ports": set(), "volumes": set()}


async def _settled(pool: Any, stack_id: Any, status: str | None = None) -> Any:
    """The stack once it settles; else a failure naming what is still under way, and the events."""
    try:
        return await settled(pool, stack_id, timeout=120, status=status)
    except AssertionError as exc:
        rows = await resource_rows(pool, stack_id)
        under_way = {n: (r.action, r.status, r.data) for n, r in rows.items() if r.status == "IN_PROGRESS"}
        raise AssertionError(f"{exc}; under way: {under_way}; events: {await event_lines(pool, stack_id)}"
                             ) from None


async def _nothing_under_way(pool: Any, stack_id: Any) -> bool:
    return all(r.status != "IN_PROGRESS" for r in (await resource_rows(pool, stack_id)).values())


SERVERS = 20
# With this seed the second, fourth and sixth boots fail (of the first twenty: some, not all).
FLAKY = SimSettings(boot_seconds=0.3, delete_seconds=0.2, volume_seconds=0.2, error_share=0.2, seed=15)


def _many_servers() -> dict[str, Any]:
    res: dict[str, Any] = {
        "port": {"type": "OS::Neutron::Port", "properties": {"network": "private"}},
        "volume": {"type": "OS::Cinder::Volume", "properties": {"size": 1}},
        "attached": {"type": "OS::Cinder::VolumeAttachment",
                     "properties": {"instance_uuid": {"get_resource": "s0"},
                                    "volume_id": {"get_resource": "volume"}}}}
    for i in range(SERVERS):
        network = {"port": {"get_resource": "port"}} if i == 0 else {"network": "private"}
        res[f"s{i}"] = {"type": "OS::Nova::Server",
                        "properties": {"flavor": "m1.tiny", "image": "cirros", "networks": [network]}}
    return hot(res)


def _failures(lines: list[tuple[str, str, str]]) -> dict[str, str]:
    return {n: reason for n, s, reason in lines if s == "CREATE_FAILED" and n.startswith("s")}


@pytest.mark.slow_ci  # 11 s; test.sh keeps the simulator's ERROR boots in tests/simcloud
@pytest.mark.parametrize("world", [FLAKY], indirect=True)
async def test_a_fifth_of_boots_in_error_fail_the_stack_as_heat_does_and_leak_nothing(world: _World) -> None:
    async with open_runtime(world.settings, "api") as api:
        stacks = {}
        for name, rollback, status in (("rolled", True, "ROLLBACK_COMPLETE"),
                                       ("kept", False, "CREATE_FAILED")):
            # Each stack's boots draw their fates from the same seeded start: the same ones fail.
            await world.sim.chaos("PUT", "/settings", {"seed": FLAKY.seed})
            stacks[name] = await operations.create_stack(
                api.pool, api.bus, project="demo", name=name, registry=default_registry(),
                stack_request=StackRequest(template=_many_servers()),
                options=operations.Options(disable_rollback=not rollback))
            done = await _settled(api.pool, stacks[name].id)
            assert done.stack_status == status, (name, done.stack_status, done.status_reason,
                                                 await event_lines(api.pool, done.id))
            failed = _failures(await event_lines(api.pool, done.id))
            assert failed, f"{name}: no server failed"
            for resource, reason in failed.items():
                assert reason.startswith(f"ResourceInError: resources.{resource}: "
                                         'Went to status ERROR due to "Message: '), reason
                assert reason.endswith(', Code: 500"'), reason

        # Rolled back: the cloud holds nothing of it. Kept: its servers (the failed ones in ERROR) stay.
        assert await _empty(world, "rolled") == {"servers": set(), "ports": set(), "volumes": set()}
        kept = await _in_cloud(world, "kept")
        assert kept["servers"]
        statuses = await asyncio.to_thread(
            lambda: {s.status for s in world.conn().compute.servers() if s.id in kept["servers"]})
        assert "ERROR" in statuses

        for name, stack in stacks.items():
            # Heat's stack fails at the first failure, while others are under way; the delete comes
            # once they end (a delete that cuts short an attach in flight is another matter: see
            # the report).
            await eventually(functools.partial(_nothing_under_way, api.pool, stack.id), timeout=60,
                             interval=0.2, what=f"{name}'s resources done")
            await operations.delete_stack(api.pool, api.bus, await _settled(api.pool, stack.id))
            await _settled(api.pool, stack.id, "DELETE_COMPLETE")
            assert await _empty(world, name) == {"servers": set(), "ports": set(), "volumes": set()}
