"""Software config end to end on the simulated cloud: it runs an agent for each server booted for it.

As an image with os-collect-config would, the simulator starts an ``ember agent`` for each
ACTIVE server whose user data carries software-config metadata, its folder standing for the
server's filesystem; the agent finds its configs through the api and runs the scripts.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer

from libs import operations
from libs.config import Settings
from libs.db import stacks
from libs.embedded.process import free_port
from libs.engine.status import Action
from libs.runtime import Runtime
from libs.simcloud.agents import AgentSettings
from libs.simcloud.nova import store as nova_store
from libs.simcloud.state import SimSettings, SimState
from libs.template.request import StackRequest
from services.api.app import make_app
from tests.integration.agent_support import kill_everything_under, lines, witness_folder
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine, event_lines, resource_rows, settled, stack_row
from tests.integration.software_support import SCRIPT, deployment_template


def _outputs(stack: stacks.StackRow) -> dict[str, Any]:
    return {o["output_key"]: o.get("output_value") for o in stack.outputs or ()}


@contextlib.asynccontextmanager
async def _cloud_with_agents(settings: Settings, database_url: str, scratch: Path
                             ) -> AsyncIterator[Runtime]:
    """The engine and the api on a simulated cloud that runs an agent per server booted for software
    config (told of its configs by the worker's push: it polls only every ten minutes here)."""
    port = free_port()
    agents = AgentSettings(api_url=f"http://127.0.0.1:{port}", root=scratch / "servers", interval=600.0,
                           nats_url=settings.nats_url, nats_prefix=settings.nats_prefix)
    try:
        async with simulated_cloud(database_url, scratch, SimSettings(boot_seconds=0.2),
                                   agents=agents) as sim:
            mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port, cloud=sim.settings())
            async with engine(mine) as rt:
                api = TestServer(make_app(mine), port=port)
                await api.start_server()
                try:
                    yield rt
                finally:
                    await api.close()
    finally:
        kill_everything_under(scratch)


async def test_a_simulated_server_runs_its_deployments_script_once_per_change(
        settings: Settings, database_url: str, scratch_path: Path) -> None:
    async with _cloud_with_agents(settings, database_url, scratch_path) as rt:
        made = await operations.create_stack(rt.pool, rt.bus, project="demo", name="sw",
                                             stack_request=StackRequest(template=deployment_template("x")))
        done = await settled(rt.pool, made.id, timeout=90)
        lines = await event_lines(rt.pool, made.id)
        assert done.stack_status == "CREATE_COMPLETE", (done.status_reason, lines)
        assert _outputs(done) == {"result": "got x", "stdout": "hello x\n"}
        await operations.update_stack(rt.pool, rt.bus, done,
                                      stack_request=StackRequest(template=deployment_template("y")))
        done = await settled(rt.pool, made.id, status="UPDATE_COMPLETE", timeout=90)
        assert _outputs(done) == {"result": "got y", "stdout": "hello y\n"}
        server_id = str((await resource_rows(rt.pool, made.id))["server"].physical_id)
    # The server's filesystem: one run per derived config, none twice.
    assert len(list((scratch_path / "servers" / server_id / "runs").iterdir())) == 2


async def test_a_lifecycle_config_runs_each_actions_config_once_at_its_time(
        settings: Settings, database_url: str, scratch_path: Path) -> None:
    witness = witness_folder(scratch_path) / "actions"

    def note(action: str) -> str:
        return f'#!/bin/sh\necho "{action} $deploy_action" >> {witness}\n'
    template = deployment_template("x")
    template["resources"]["config"] = {"type": "Ember::LifecycleConfig", "properties": {
        "create_config": note("create"), "suspend_config": note("suspend"),
        "resume_config": note("resume"), "delete_config": note("delete")}}
    template["outputs"] = {}
    async with _cloud_with_agents(settings, database_url, scratch_path) as rt:
        made = await operations.create_stack(rt.pool, rt.bus, project="demo", name="life",
                                             stack_request=StackRequest(template=template))
        assert (await settled(rt.pool, made.id, timeout=90)).stack_status == "CREATE_COMPLETE"
        assert lines(witness) == ["create CREATE"]
        for action, status, seen in ((Action.SUSPEND, "SUSPEND_COMPLETE", "suspend SUSPEND"),
                                     (Action.RESUME, "RESUME_COMPLETE", "resume RESUME"),
                                     (Action.DELETE, "DELETE_COMPLETE", "delete DELETE")):
            stack = await stack_row(rt.pool, made.id)
            if action is Action.DELETE:
                await operations.delete_stack(rt.pool, rt.bus, stack)
            else:
                await operations.stack_action(rt.pool, rt.bus, stack, action)
            done = await settled(rt.pool, made.id, status=status, timeout=90)
            assert done.stack_status == status, done.status_reason
            assert lines(witness)[-1] == seen
    # Each once, at its time; UPDATE has no config here, so none ran for it.
    assert lines(witness) == ["create CREATE", "suspend SUSPEND", "resume RESUME", "delete DELETE"]


async def test_a_raw_servers_user_data_naming_a_config_boots_with_the_configs_text(
        settings: Settings, database_url: str, scratch_path: Path) -> None:
    unknown = "7d5b0c84-2f0e-4c3a-9a55-0b8e6b0f1c11"  # a uuid naming no config is text, as in Heat
    def server(user_data: Any) -> dict[str, Any]:
        return {"type": "OS::Nova::Server", "properties": {
            "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}],
            "user_data_format": "RAW", "user_data": user_data}}
    template = {"heat_template_version": "2016-10-14", "resources": {
        "config": {"type": "OS::Heat::SoftwareConfig", "properties": {"config": SCRIPT}},
        "named": server({"get_resource": "config"}), "other": server(unknown)}}
    async with _cloud_with_agents(settings, database_url, scratch_path) as rt:
        made = await operations.create_stack(rt.pool, rt.bus, project="demo", name="ud",
                                             stack_request=StackRequest(template=template))
        done = await settled(rt.pool, made.id, timeout=90)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        rows = await resource_rows(rt.pool, made.id)
        async with rt.pool.acquire() as conn:  # what the simulated Nova was given
            booted = {name: await nova_store.get(conn, str(rows[name].physical_id), SimState.now())
                      for name in ("named", "other")}
    given = {name: base64.b64decode(row["data"]["user_data"]).decode() for name, row in booted.items()
             if row is not None}
    assert given == {"named": SCRIPT, "other": unknown}


async def test_a_simulated_server_answers_over_nats(settings: Settings, database_url: str,
                                                    scratch_path: Path) -> None:
    """NATS_SIGNAL: the agent publishes its outputs to JetStream, the worker applies them; a failing
    script fails the deployment with its stderr, as a POSTed answer does."""
    async with _cloud_with_agents(settings, database_url, scratch_path) as rt:
        made = await operations.create_stack(rt.pool, rt.bus, project="demo", name="sw_nats",
                                             stack_request=StackRequest(template=deployment_template(
                                                 "x", transport="NATS_SIGNAL")))
        done = await settled(rt.pool, made.id, timeout=90)
        lines = await event_lines(rt.pool, made.id)
        assert done.stack_status == "CREATE_COMPLETE", (done.status_reason, lines)
        assert _outputs(done) == {"result": "got x", "stdout": "hello x\n"}
        failing = '#!/bin/sh\necho "no disk for $foo" >&2\nexit 3\n'
        changed = deployment_template("y", transport="NATS_SIGNAL", script=failing)
        await operations.update_stack(rt.pool, rt.bus, done, stack_request=StackRequest(template=changed))
        failed = await settled(rt.pool, made.id, status="UPDATE_FAILED", timeout=90)
        assert failed.status_reason == (
            "Resource UPDATE failed: Error: resources.deployment: Deployment to server failed: "
            "deploy_status_code : Deployment exited with non-zero status code: 3; "
            "deploy_stderr: no disk for y")
