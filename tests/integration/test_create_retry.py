"""Heat's ``action_retry_limit``: a server that goes ERROR while it is made is deleted and made again.

A planner and a worker in this process, the simulator as the cloud (its chaos settings decide
which boots go ERROR), read back through openstacksdk as an operator would.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from libs import operations
from libs.config import Settings
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from tests.integration.cloud_support import Sim, simulated_cloud
from tests.integration.engine_support import engine, event_lines, hot, settled, stack_row
from tests.support import eventually

pytestmark = pytest.mark.slow
# Heat's events of a create tried again: it failed, it is deleted, then it is made again.
RETRIED = ["CREATE_IN_PROGRESS", "CREATE_FAILED", "DELETE_IN_PROGRESS", "DELETE_COMPLETE"]

TEMPLATE = hot({"web": {"type": "OS::Nova::Server", "properties": {
    "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}]}}})


EVERY_BOOT_FAILS = SimSettings(boot_seconds=0.2, error_share=1.0)


@dataclasses.dataclass(frozen=True)
class _World:
    sim: Sim
    rt: Runtime


@contextlib.asynccontextmanager
async def _world(settings: Settings, database_url: str, directory: Path, *, retry_limit: int,
                 cloud: SimSettings = EVERY_BOOT_FAILS, ready_timeout: float | None = None
                 ) -> AsyncIterator[_World]:
    async with simulated_cloud(database_url, directory, cloud) as sim:
        with_cloud = dataclasses.replace(settings, cloud=sim.settings(), action_retry_limit=retry_limit,
                                         ready_timeout=ready_timeout)
        async with engine(with_cloud) as rt:
            yield _World(sim, rt)


async def _servers(world: _World, stack: str) -> dict[str, str]:
    def read() -> dict[str, str]:
        servers = world.sim.connect().compute.servers()
        return {s.id: s.status for s in servers if s.name.startswith(f"{stack}-")}
    return await asyncio.to_thread(read)


async def _create(world: _World, name: str) -> uuid.UUID:
    made = await operations.create_stack(world.rt.pool, world.rt.bus, project="demo", name=name,
                                         stack_request=StackRequest(template=TEMPLATE),
                                         registry=default_registry())
    return made.id


def _of_web(lines: list[tuple[str, str, str]]) -> list[str]:
    return [status for name, status, _ in lines if name == "web"]


async def _failed_once_then_made(world: _World, name: str, mended: dict[str, float]
                                 ) -> list[tuple[str, str, str]]:
    """Create a stack; once its server's create failed, mend the cloud: the create completes."""
    stack_id = await _create(world, name)

    async def failed_once() -> bool:
        return "CREATE_FAILED" in _of_web(await event_lines(world.rt.pool, stack_id))
    await eventually(failed_once, timeout=30, what="the first create to fail")
    await world.sim.chaos("PUT", "/settings", mended)
    done = await settled(world.rt.pool, stack_id, timeout=60)
    lines = await event_lines(world.rt.pool, stack_id)
    assert done.stack_status == "CREATE_COMPLETE", (done.status_reason, lines)
    return lines


async def test_a_server_that_goes_error_is_deleted_and_made_again(
        settings: Settings, database_url: str, tmp_path: Path) -> None:
    async with _world(settings, database_url, tmp_path, retry_limit=2) as world:
        # The next boot (after Heat's 2 s backoff) goes well.
        lines = await _failed_once_then_made(world, "again", {"error_share": 0.0})
        assert _of_web(lines) == [*RETRIED, "CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
        failed = next(r for n, s, r in lines if n == "web" and s == "CREATE_FAILED")
        assert failed.startswith('ResourceInError: resources.web: Went to status ERROR due to "Message: ')
        # The server in ERROR is gone; the one made again is the stack's.
        assert list((await _servers(world, "again")).values()) == ["ACTIVE"]


async def test_a_server_not_active_within_the_ready_timeout_is_deleted_and_made_again(
        settings: Settings, database_url: str, tmp_path: Path) -> None:
    stuck = SimSettings(boot_seconds=3600.0)
    async with _world(settings, database_url, tmp_path, retry_limit=3, cloud=stuck,
                      ready_timeout=1.0) as world:
        # Boots are quick again before the create after Heat's backoff (2 s, then 4 and 8 s).
        lines = await _failed_once_then_made(world, "slow", {"boot_seconds": 0.2})
        assert _of_web(lines)[:4] == RETRIED and _of_web(lines)[-1] == "CREATE_COMPLETE", lines
        failed = next(r for n, s, r in lines if n == "web" and s == "CREATE_FAILED")
        assert failed == ("ResourceInError: resources.web: Server did not become ACTIVE within 1s"
                          " (still BUILD)")
        # The server that never booted is gone; the one made again is the stack's.
        assert list((await _servers(world, "slow")).values()) == ["ACTIVE"]


@pytest.mark.slow_ci  # 9 s; test.sh keeps the retry that succeeds
async def test_past_the_limit_the_resource_fails_and_its_delete_leaves_nothing(
        settings: Settings, database_url: str, tmp_path: Path) -> None:
    async with _world(settings, database_url, tmp_path, retry_limit=1) as world:
        stack_id = await _create(world, "never")
        done = await settled(world.rt.pool, stack_id, timeout=60)
        lines = await event_lines(world.rt.pool, stack_id)
        assert done.stack_status == "CREATE_FAILED", lines
        assert done.status_reason.startswith("Resource CREATE failed: ResourceInError: resources.web: "
                                             "Went to status ERROR"), done.status_reason
        assert _of_web(lines) == [*RETRIED, "CREATE_IN_PROGRESS", "CREATE_FAILED"]
        # As Heat: the last server in ERROR stays with the failed resource, until the stack is deleted.
        assert list((await _servers(world, "never")).values()) == ["ERROR"]
        await operations.delete_stack(world.rt.pool, world.rt.bus, await stack_row(world.rt.pool, stack_id))
        gone = await settled(world.rt.pool, stack_id, timeout=60)
        assert gone.stack_status == "DELETE_COMPLETE", (await event_lines(world.rt.pool, stack_id))[-3:]
        assert await _servers(world, "never") == {}


@pytest.mark.slow_ci  # ~30 s of boots; the two cases above keep the rule in test.sh
async def test_with_a_fifth_of_boots_in_error_fifty_servers_complete_unattended(
        settings: Settings, database_url: str, tmp_path: Path) -> None:
    servers = 50
    template = hot({f"s{i}": TEMPLATE["resources"]["web"] for i in range(servers)})
    # Enough tries that no server meets six ERRORs in a row (a chance of 0.2**6 each).
    async with _world(settings, database_url, tmp_path, retry_limit=5) as world:
        await world.sim.chaos("PUT", "/settings", {"error_share": 0.2, "seed": 3})
        made = await operations.create_stack(world.rt.pool, world.rt.bus, project="demo", name="fifty",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        done = await settled(world.rt.pool, made.id, timeout=300)
        lines = await event_lines(world.rt.pool, made.id)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        retried = [n for n, s, _ in lines if s == "CREATE_FAILED"]
        assert retried, "no boot went ERROR: the share did not apply"
        # Each retry is in the events: the failure, the delete, the create again.
        assert len([n for n, s, _ in lines if s == "DELETE_COMPLETE"]) == len(retried)
        creates = [n for n, s, _ in lines if s == "CREATE_IN_PROGRESS" and n != "fifty"]
        assert len(creates) == servers + len(retried)
        in_cloud = await _servers(world, "fifty")
        assert sorted(in_cloud.values()) == ["ACTIVE"] * servers  # those in ERROR were deleted


@pytest.mark.slow_ci  # about 5 s; test.sh keeps a create made again
async def test_a_server_deleted_behind_embers_back_while_it_builds_is_made_again(
        settings: Settings, database_url: str, tmp_path: Path) -> None:
    async with _world(settings, database_url, tmp_path, retry_limit=1,
                      cloud=SimSettings(boot_seconds=3600.0)) as world:
        stack_id = await _create(world, "lost")

        async def building() -> list[str]:
            return list(await _servers(world, "lost"))
        [first] = await eventually(building, timeout=30, what="the server booting")
        await world.sim.chaos("PUT", "/settings", {"boot_seconds": 0.2})
        await world.sim.chaos("POST", f"/servers/{first}/delete")
        done = await settled(world.rt.pool, stack_id, timeout=60)
        lines = await event_lines(world.rt.pool, stack_id)
        assert done.stack_status == "CREATE_COMPLETE", (done.status_reason, lines)
        assert _of_web(lines) == [*RETRIED, "CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
        failed = next(r for n, s, r in lines if n == "web" and s == "CREATE_FAILED")
        assert failed == f"ResourceInError: resources.web: Server {first} is gone from the cloud"
        [(new, state)] = (await _servers(world, "lost")).items()
        assert new != first and state == "ACTIVE"


@pytest.mark.slow_ci  # about 10 s each; test.sh keeps a create made again
@pytest.mark.parametrize("act", ["error", "delete"])  # the resize breaks the server; someone deletes it
async def test_a_server_its_update_left_in_error_or_lost_is_deleted_and_made_again(
        settings: Settings, database_url: str, tmp_path: Path, act: str) -> None:
    slow_resizes = SimSettings(boot_seconds=0.2)
    async with _world(settings, database_url, tmp_path, retry_limit=1, cloud=slow_resizes) as world:
        stack_id = await _create(world, "resized")
        made = await settled(world.rt.pool, stack_id, timeout=60)
        assert made.stack_status == "CREATE_COMPLETE", made.status_reason
        [old] = await _servers(world, "resized")
        await world.sim.chaos("PUT", "/settings", {"boot_seconds": 30.0})  # the resize takes its time
        bigger = hot({"web": {"type": "OS::Nova::Server", "properties": {
            **TEMPLATE["resources"]["web"]["properties"], "flavor": "m1.small"}}})
        await operations.update_stack(world.rt.pool, world.rt.bus, await stack_row(world.rt.pool, stack_id),
                                      stack_request=StackRequest(template=bigger))

        async def resizing() -> bool:
            return (await _servers(world, "resized")).get(old) == "RESIZE"
        await eventually(resizing, timeout=30, what="the resize under way")
        await world.sim.chaos("POST", f"/servers/{old}/{act}")
        await world.sim.chaos("PUT", "/settings", {"boot_seconds": 0.2})
        done = await settled(world.rt.pool, stack_id, timeout=60)
        lines = await event_lines(world.rt.pool, stack_id)
        assert done.stack_status == "UPDATE_COMPLETE", (done.status_reason, lines)
        assert _of_web(lines)[-6:] == ["UPDATE_IN_PROGRESS", "UPDATE_FAILED", "DELETE_IN_PROGRESS",
                                       "DELETE_COMPLETE", "CREATE_IN_PROGRESS", "CREATE_COMPLETE"]
        [(new, state)] = (await _servers(world, "resized")).items()
        assert new != old and state == "ACTIVE"
        flavor = await asyncio.to_thread(lambda: world.sim.connect().compute.get_server(new).flavor)
        assert flavor["original_name"] == "m1.small"
