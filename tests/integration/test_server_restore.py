"""A server replacement that fails and is rolled back: the old server gets its network back.

A replacement server first takes the old one's interfaces (Heat's ``prepare_for_replace``:
a port is bound to one server at a time). When the replacement then fails and the stack
rolls back, the old server is the stack's again, and, as Heat's ``restore_prev_rsrc``
does, it takes back what was taken from it: the ports go from the failed replacement to
the old server (one Nova made, which Nova deleted on the detach, is made again on its
network). The failed replacement is deleted, and nothing of it is left.

The planner and a worker run in this process; the cloud is the simulator, read through
openstacksdk as an operator would.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from libs import operations
from libs.config import Settings
from libs.db import resources
from libs.db.stacks import StackRow
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from tests.integration.cloud_support import Sim, simulated_cloud
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually

pytestmark = pytest.mark.slow

# The servers, by how they are on the network: a template port, a network (Nova makes the
# port), a subnet (Ember makes the port).
SERVERS = {"on_port": {"port": {"get_resource": "p"}}, "on_net": {"network": "private"},
           "on_subnet": {"subnet": "private-subnet"}}


@dataclasses.dataclass(frozen=True)
class _World:
    sim: Sim
    api: Runtime


@pytest.fixture
async def world(settings: Settings, database_url: str, tmp_path: Path) -> AsyncIterator[_World]:
    sim_settings = SimSettings(boot_seconds=0.3, delete_seconds=0.2)
    async with simulated_cloud(database_url, tmp_path, sim_settings) as sim:
        # A replacement in ERROR fails at once (no create tried again), so the rollback comes soon.
        with_cloud = dataclasses.replace(settings, cloud=sim.settings(), action_retry_limit=0)
        async with engine(with_cloud) as api:
            yield _World(sim, api)


def _template(user_data: str, *, gate: bool | None = None) -> dict[str, Any]:
    defined: dict[str, Any] = {"p": {"type": "OS::Neutron::Port", "properties": {"network": "private"}}}
    for name, network in SERVERS.items():
        defined[name] = {"type": "OS::Nova::Server", "properties": {
            "flavor": "m1.tiny", "image": "cirros", "networks": [network], "user_data": user_data,
            "user_data_update_policy": "REPLACE"}}
    if gate is not None:  # needs every server; with True, its update fails once they are in place
        defined["gate"] = {"type": "OS::Heat::TestResource", "properties": {"fail": gate},
                           "depends_on": list(SERVERS)}
    return hot(defined)


async def _ports_of(world: _World, server_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each server's ports (id, network, addresses), as Neutron shows them and as Nova does."""
    def read() -> dict[str, list[dict[str, Any]]]:
        conn = world.sim.connect()
        out: dict[str, list[dict[str, Any]]] = {}
        for server_id in server_ids:
            bound = {p.id: (p.network_id, sorted(ip["ip_address"] for ip in p.fixed_ips))
                     for p in conn.network.ports(device_id=server_id)}
            attached = {i.port_id for i in conn.compute.server_interfaces(server_id)}
            assert set(bound) == attached, (server_id, bound, attached)
            out[server_id] = [{"id": port_id, "network_id": net, "ips": ips}
                              for port_id, (net, ips) in sorted(bound.items())]
        return out
    return await asyncio.to_thread(read)


async def _servers(world: _World, stack: str) -> dict[str, str]:
    """The stack's servers in the cloud (named after it): id -> status."""
    def read() -> dict[str, str]:
        servers = world.sim.connect().compute.servers()
        return {s.id: s.status for s in servers if s.name.startswith(f"{stack}-")}
    return await asyncio.to_thread(read)


@dataclasses.dataclass(frozen=True)
class _Made:
    stack: StackRow
    servers: dict[str, str]  # resource name -> server id
    ports: dict[str, list[dict[str, Any]]]  # server id -> its ports


async def _made(world: _World, name: str, *, gate: bool | None = None) -> _Made:
    api = world.api
    made = await operations.create_stack(api.pool, api.bus, project="demo", name=name,
                                         stack_request=StackRequest(template=_template("one", gate=gate)),
                                         registry=default_registry())
    created = await settled(api.pool, made.id, timeout=120)
    assert created.stack_status == "CREATE_COMPLETE", created.status_reason
    rows = await resource_rows(api.pool, made.id)
    servers = {name: str(rows[name].physical_id) for name in SERVERS}
    ports = await _ports_of(world, list(servers.values()))
    assert [p["id"] for p in ports[servers["on_port"]]] == [rows["p"].physical_id]
    assert all(len(held) == 1 for held in ports.values()), ports
    return _Made(created, servers, ports)


async def _restored(world: _World, made: _Made, *, replacements_failed: bool = True
                    ) -> list[tuple[str, str, str]]:
    """The stack rolled back: its old servers are its own again, on their networks as they were."""
    api = world.api
    done = await settled(api.pool, made.stack.id, timeout=120)
    lines = await event_lines(api.pool, made.stack.id)
    assert done.stack_status == "ROLLBACK_COMPLETE", (done.status_reason, lines)
    failed = [s for n, s, _ in lines if n in SERVERS].count("CREATE_FAILED")
    assert failed == (len(SERVERS) if replacements_failed else 0), lines
    after = await resource_rows(api.pool, made.stack.id)
    assert {name: after[name].physical_id for name in SERVERS} == made.servers
    assert all(after[name].status == "COMPLETE" for name in SERVERS), {n: r.status for n, r in after.items()}
    async with api.pool.acquire() as conn:
        names = [r.name for r in await resources.for_stack(conn, made.stack.id)]
        assert len(names) == len(set(names)), "no replacement left"
    # And none in the cloud.
    assert await _servers(world, made.stack.name) == dict.fromkeys(made.servers.values(), "ACTIVE")
    now = await _ports_of(world, list(made.servers.values()))
    # The template's port and the one Ember made are back on their servers, as they were.
    for name in ("on_port", "on_subnet"):
        assert now[made.servers[name]] == made.ports[made.servers[name]], (name, now, lines)
    # Nova deleted its own port on the detach: one is made again on its network, at its address.
    [was], [back] = made.ports[made.servers["on_net"]], now[made.servers["on_net"]]
    assert (back["network_id"], back["ips"]) == (was["network_id"], was["ips"])
    # The rollback's update of each old server gave them back (Heat writes no event of it).
    rolled = lines[lines.index((made.stack.name, "ROLLBACK_IN_PROGRESS", "Stack ROLLBACK started")):]
    for name in SERVERS:
        assert [s for n, s, _ in rolled if n == name and s.startswith("UPDATE")] == [
            "UPDATE_IN_PROGRESS", "UPDATE_COMPLETE"], rolled
    return lines


async def _updated_and_deleted(world: _World, made: _Made) -> None:
    """The stack updates again once the cloud boots, and its delete leaves nothing."""
    api = world.api
    await world.sim.chaos("PUT", "/settings", {"error_share": 0.0, "boot_seconds": 0.3})
    await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.stack.id),
                                  stack_request=StackRequest(template=_template("three")))
    again = await settled(api.pool, made.stack.id, timeout=120)
    assert again.stack_status == "UPDATE_COMPLETE", (again.status_reason,
                                                     await event_lines(api.pool, made.stack.id))
    await operations.delete_stack(api.pool, api.bus, again)
    await settled(api.pool, made.stack.id, timeout=120, status="DELETE_COMPLETE")
    assert await _servers(world, made.stack.name) == {}


async def test_a_failed_replacement_rolled_back_gives_the_old_servers_their_ports_back(world: _World) -> None:
    made = await _made(world, "back")
    # Every new boot goes ERROR: the replacements fail, and the update rolls back.
    await world.sim.chaos("PUT", "/settings", {"error_share": 1.0})
    await operations.update_stack(world.api.pool, world.api.bus, made.stack,
                                  stack_request=StackRequest(template=_template("two")),
                                  options=operations.Options(disable_rollback=False))
    await _restored(world, made)
    await _updated_and_deleted(world, made)


@pytest.mark.slow_ci  # 10 s; test.sh keeps the rollback case beside it, .ci/run runs this one
async def test_an_update_cancelled_while_the_replacements_boot_gives_the_ports_back(world: _World) -> None:
    made = await _made(world, "cancel")
    # The new boots take a while, and end in ERROR: the rollback waits for them first.
    await world.sim.chaos("PUT", "/settings", {"error_share": 1.0, "boot_seconds": 3})
    api = world.api
    await operations.update_stack(api.pool, api.bus, made.stack,
                                  stack_request=StackRequest(template=_template("two")))

    async def booting() -> bool:
        async with api.pool.acquire() as conn:
            rows = await resources.for_stack(conn, made.stack.id)
        return sum(1 for r in rows if r.replaces is not None and r.physical_id) == len(SERVERS)
    await eventually(booting, timeout=60, interval=0.05, what="the replacements booting")
    await operations.cancel_update(api.pool, api.bus, await stack_row(api.pool, made.stack.id), rollback=True)
    await _restored(world, made)
    await _updated_and_deleted(world, made)



@pytest.mark.slow_ci  # 12 s; test.sh keeps the failed replacement's rollback
async def test_a_rollback_after_the_replacements_were_made_goes_back_to_the_old_servers(
        world: _World) -> None:
    made = await _made(world, "made", gate=False)
    # The new servers boot, then the update of a resource that needs them fails (so the old ones,
    # which it needed, are still there): Heat's rollback goes back to the old servers, gives them
    # their ports back and deletes the new ones.
    await operations.update_stack(world.api.pool, world.api.bus, made.stack,
                                  stack_request=StackRequest(template=_template("two", gate=True)),
                                  options=operations.Options(disable_rollback=False))
    lines = await _restored(world, made, replacements_failed=False)
    assert [s for n, s, _ in lines if n in SERVERS].count("CREATE_COMPLETE") == 2 * len(SERVERS), lines
    await _updated_and_deleted(world, made)
