"""Software config end to end on the simulated cloud: it runs an agent for each server booted for it.

As an image with os-collect-config would, the simulator starts an ``ember agent`` for each
ACTIVE server whose user data carries software-config metadata, its folder standing for the
server's filesystem; the agent finds its configs through the api and runs the scripts.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestServer

from libs import operations
from libs.config import Settings
from libs.db import stacks
from libs.embedded.process import free_port
from libs.simcloud.agents import AgentSettings
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from services.api.app import make_app
from tests.integration.agent_support import kill_everything_under
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine, event_lines, resource_rows, settled

SCRIPT = '#!/bin/sh\necho "hello $foo"\nprintf "got $foo" > "$heat_outputs_path.result"\n'


def _template(foo: str) -> dict[str, Any]:
    return {
        "heat_template_version": "2016-10-14",
        "resources": {
            "server": {"type": "OS::Nova::Server", "properties": {
                "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}],
                "user_data_format": "SOFTWARE_CONFIG"}},
            "config": {"type": "OS::Heat::SoftwareConfig", "properties": {
                "group": "script", "config": SCRIPT, "inputs": [{"name": "foo"}],
                "outputs": [{"name": "result"}]}},
            "deployment": {"type": "OS::Heat::SoftwareDeployment", "properties": {
                "config": {"get_resource": "config"}, "server": {"get_resource": "server"},
                "input_values": {"foo": foo}}},
        },
        "outputs": {"result": {"value": {"get_attr": ["deployment", "result"]}},
                    "stdout": {"value": {"get_attr": ["deployment", "deploy_stdout"]}}},
    }


def _outputs(stack: stacks.StackRow) -> dict[str, Any]:
    return {o["output_key"]: o.get("output_value") for o in stack.outputs or ()}


async def test_a_simulated_server_runs_its_deployments_script_once_per_change(
        settings: Settings, database_url: str, scratch_path: Path) -> None:
    port = free_port()
    api_url = f"http://127.0.0.1:{port}"
    servers = scratch_path / "servers"
    agents = AgentSettings(api_url=api_url, root=servers, interval=600.0,  # told by push, not by polls
                           nats_url=settings.nats_url, nats_prefix=settings.nats_prefix)
    try:
        async with simulated_cloud(database_url, scratch_path, SimSettings(boot_seconds=0.2),
                                   agents=agents) as sim:
            mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port, cloud=sim.settings())
            async with engine(mine) as rt:
                api = TestServer(make_app(mine), port=port)
                await api.start_server()
                try:
                    made = await operations.create_stack(rt.pool, rt.bus, project="demo", name="sw",
                                                         stack_request=StackRequest(template=_template("x")))
                    done = await settled(rt.pool, made.id, timeout=90)
                    lines = await event_lines(rt.pool, made.id)
                    assert done.stack_status == "CREATE_COMPLETE", (done.status_reason, lines)
                    assert _outputs(done) == {"result": "got x", "stdout": "hello x\n"}
                    await operations.update_stack(rt.pool, rt.bus, done,
                                                  stack_request=StackRequest(template=_template("y")))
                    done = await settled(rt.pool, made.id, status="UPDATE_COMPLETE", timeout=90)
                    assert _outputs(done) == {"result": "got y", "stdout": "hello y\n"}
                    server_id = str((await resource_rows(rt.pool, made.id))["server"].physical_id)
                finally:
                    await api.close()
    finally:
        kill_everything_under(scratch_path)
    # The server's filesystem: one run per derived config, none twice.
    assert len(list((servers / server_id / "runs").iterdir())) == 2

