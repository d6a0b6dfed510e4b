"""A deployment's update as Heat's: replaced for a ``replace_on_change`` input, cancelled when
superseded, and its attributes read from its deployment row after a later PUT."""

from __future__ import annotations

from typing import Any

from libs.config import Settings
from tests.integration.engine_support import event_lines, settled
from tests.integration.test_software_deployment import (
    MakeServer,
    create,
    inputs,
    outputs,
    physical_ids,
    running,
    server_of,
    update,
)

SCRIPT = "#!/bin/sh\necho \"$foo $bar\"\n"


def replacing(foo: str, bar: str) -> dict[str, Any]:
    return {
        "heat_template_version": "2016-10-14",
        "resources": {
            "server": {"type": "OS::Heat::None"},
            "config": {"type": "OS::Heat::SoftwareConfig", "properties": {
                "group": "script", "config": SCRIPT,
                "inputs": [{"name": "foo", "replace_on_change": True}, {"name": "bar"}],
                "outputs": [{"name": "result"}]}},
            "deployment": {"type": "OS::Heat::SoftwareDeployment", "properties": {
                "config": {"get_resource": "config"}, "server": {"get_resource": "server"},
                "input_values": {"foo": foo, "bar": bar}, "signal_transport": "HEAT_SIGNAL"}},
        },
        "outputs": {"result": {"value": {"get_attr": ["deployment", "result"]}}},
    }


async def test_a_replace_on_change_input_replaces_the_deployment_and_another_input_updates_it(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_replace", replacing("f1", "b1"))
        server = await server_of(rt, stack.id)
        await agent.answer(await agent.given(server, "CREATE"), {"deploy_status_code": 0, "result": "one"})
        await settled(rt.pool, stack.id, status="CREATE_COMPLETE")
        first = (await physical_ids(rt, stack.id))["deployment"]

        await update(rt, stack.id, replacing("f1", "b2"))  # not replace_on_change: updated in place
        given = await agent.given(server, "UPDATE")
        assert (inputs(given)["foo"], inputs(given)["bar"]) == ("f1", "b2")
        await agent.answer(given, {"deploy_status_code": 0, "result": "two"})
        done = await settled(rt.pool, stack.id, status="UPDATE_COMPLETE")
        assert (await physical_ids(rt, stack.id))["deployment"] == first
        assert outputs(done)["result"] == "two"

        await update(rt, stack.id, replacing("f2", "b2"))  # replace_on_change: a new deployment
        made = await agent.given(server, "CREATE")
        assert inputs(made)["foo"] == "f2"
        await agent.answer(made, {"deploy_status_code": 0, "result": "three"})
        done = await settled(rt.pool, stack.id, status="UPDATE_COMPLETE")
        second = (await physical_ids(rt, stack.id))["deployment"]
        assert second not in (None, first)
        assert outputs(done)["result"] == "three"
        assert [str(d.id) for d, _ in await agent.configs(server)] == [second]  # the old one is gone
        lines = await event_lines(rt.pool, stack.id)
        # Heat's deployment raises UpdateReplace without a name from its handle_update.
        assert ("deployment", "UPDATE_COMPLETE", "The Resource Unknown requires replacement.") in lines


async def test_a_deployment_still_waiting_when_its_stack_times_out_is_cancelled(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_cancel", replacing("f1", "b1"))
        server = await server_of(rt, stack.id)
        given = await agent.given(server, "CREATE")
        deployment_id = (await physical_ids(rt, stack.id))["deployment"]
        async with rt.pool.acquire() as conn:  # the stack's timeout passes now
            await conn.execute("UPDATE traversals SET deadline = now() WHERE stack_id = $1", stack.id)
        failed = await settled(rt.pool, stack.id)
        assert (failed.stack_status, failed.status_reason) == ("CREATE_FAILED", "Timed out")
        async with agent.http.get(f"{agent.api_url}/v1/demo/software_deployments/{deployment_id}") as r:
            assert r.status == 200, await r.text()
            shown = (await r.json())["software_deployment"]
        # Heat's handle_create_cancel: the deployment no longer waits for its server.
        assert (shown["status"], shown["status_reason"]) == ("FAILED", "Deployment cancelled.")
        assert await agent.answer(given, {"deploy_status_code": 0}) == 200  # too late: changes nothing
        async with agent.http.get(f"{agent.api_url}/v1/demo/software_deployments/{deployment_id}") as r:
            assert (await r.json())["software_deployment"]["status"] == "FAILED"


async def test_outputs_put_after_the_deployment_completed_reach_its_attributes_and_the_stack_outputs(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_put_later", replacing("f1", "b1"))
        server = await server_of(rt, stack.id)
        await agent.answer(await agent.given(server, "CREATE"), {"deploy_status_code": 0, "result": "one"})
        await settled(rt.pool, stack.id, status="CREATE_COMPLETE")
        deployment_id = (await physical_ids(rt, stack.id))["deployment"]
        api = f"{agent.api_url}/v1/demo"
        later = {"result": "later", "deploy_stdout": "again\n", "deploy_status_code": 0}
        async with agent.http.put(f"{api}/software_deployments/{deployment_id}",
                                  json={"output_values": later}) as r:
            assert r.status == 200, await r.text()
        stack_path = f"{api}/stacks/sw_put_later/{stack.id}"
        async with agent.http.get(f"{stack_path}/outputs/result") as r:
            assert r.status == 200, await r.text()
            assert (await r.json())["output"]["output_value"] == "later"
        async with agent.http.get(f"{stack_path}/resources/deployment") as r:
            attributes = (await r.json())["resource"]["attributes"]
        assert (attributes["result"], attributes["deploy_stdout"]) == ("later", "again\n")
