"""Software configs and deployments through the engine, with the test as the server's agent.

The agent's part is what heat-config-notify does: it reads the derived configs stored for its
server, and posts the outputs to the ``deploy_signal_id`` URL of the config's inputs with the
``deploy_signal_verb`` (here the api in this process, on a real port), so the whole path is the
one a real agent takes: derived config stored by the worker, signal through the api, the
resource's wait seeing the deployment row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from libs import operations
from libs.config import Settings
from libs.db import software_configs, software_deployments, stacks
from libs.embedded.process import free_port
from libs.engine.status import Action
from libs.runtime import Runtime
from libs.template.request import StackRequest
from services.api.app import make_app
from tests.integration.agent_support import kill_everything_under
from tests.integration.engine_support import engine, event_lines, resource_rows, settled
from tests.support import ember, eventually, terminate

MakeServer = Callable[..., Awaitable[TestServer]]
SCRIPT = "#!/bin/sh\necho \"hello $foo\"\n"


def template(foo: str = "x", *, actions: list[str] | None = None, transport: str = "HEAT_SIGNAL",
             extra: dict[str, Any] | None = None) -> dict[str, Any]:
    deployment: dict[str, Any] = {
        "config": {"get_resource": "config"}, "server": {"get_resource": "server"},
        "input_values": {"foo": foo}, "signal_transport": transport}
    if actions is not None:
        deployment["actions"] = actions
    return {
        "heat_template_version": "2016-10-14",
        "resources": {
            "server": {"type": "OS::Heat::None"},
            "config": {"type": "OS::Heat::SoftwareConfig", "properties": {
                "group": "script", "config": SCRIPT, "inputs": [{"name": "foo"}],
                "outputs": [{"name": "result"}, {"name": "bad", "error_output": True}]}},
            "deployment": {"type": "OS::Heat::SoftwareDeployment", "properties": deployment},
            **(extra or {}),
        },
        "outputs": {"result": {"value": {"get_attr": ["deployment", "result"]}},
                    "stdout": {"value": {"get_attr": ["deployment", "deploy_stdout"]}},
                    "config": {"value": {"get_attr": ["config", "config"]}}},
    }


@dataclasses.dataclass
class Agent:
    """The server's side: what it was given to run, and its answers."""

    rt: Runtime
    http: aiohttp.ClientSession
    # The api's URL, for a real ``ember agent``.
    api_url: str

    async def configs(self, server_id: str) -> list[tuple[software_deployments.DeploymentRow,
                                                          software_configs.ConfigRow]]:
        async with self.rt.pool.acquire() as conn:
            return await software_deployments.configs_of_server(conn, server_id)

    async def given(self, server_id: str, action: str) -> software_configs.ConfigRow:
        """The derived config of ``action`` once the server has it waiting for an answer."""
        async def probe() -> software_configs.ConfigRow | None:
            return next((c for d, c in await self.configs(server_id)
                         if d.status == "IN_PROGRESS" and inputs(c)["deploy_action"] == action), None)
        return await eventually(probe, timeout=30, what=f"a {action} config for {server_id}")

    async def answer(self, config: software_configs.ConfigRow, body: Any) -> int:
        values = inputs(config)
        async with self.http.request(values["deploy_signal_verb"], values["deploy_signal_id"],
                                     json=body) as r:
            return r.status


def inputs(config: software_configs.ConfigRow) -> dict[str, Any]:
    return {i["name"]: i.get("value") for i in config.config["inputs"]}


@contextlib.asynccontextmanager
async def running(settings: Settings, aiohttp_server: MakeServer) -> AsyncIterator[tuple[Runtime, Agent]]:
    port = free_port()
    mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port)
    async with engine(mine) as rt, aiohttp.ClientSession() as http:
        await aiohttp_server(make_app(mine), port=port)
        yield rt, Agent(rt, http, mine.api_url)


async def create(rt: Runtime, name: str, body: dict[str, Any]) -> stacks.StackRow:
    return await operations.create_stack(rt.pool, rt.bus, project="demo", name=name,
                                         stack_request=StackRequest(template=body))


async def update(rt: Runtime, stack_id: uuid.UUID, body: dict[str, Any]) -> None:
    async with rt.pool.acquire() as conn:
        current = await stacks.get(conn, stack_id)
    assert current is not None
    await operations.update_stack(rt.pool, rt.bus, current, stack_request=StackRequest(template=body))


async def physical_ids(rt: Runtime, stack_id: uuid.UUID) -> dict[str, str | None]:
    return {name: row.physical_id for name, row in (await resource_rows(rt.pool, stack_id)).items()}


async def deployment(rt: Runtime, deployment_id: str) -> software_deployments.DeploymentRow:
    async with rt.pool.acquire() as conn:
        found = await software_deployments.get(conn, uuid.UUID(deployment_id))
    assert found is not None
    return found


async def config_row(rt: Runtime, config_id: uuid.UUID | str) -> software_configs.ConfigRow | None:
    async with rt.pool.acquire() as conn:
        return await software_configs.get(conn, uuid.UUID(str(config_id)))


def outputs(stack: stacks.StackRow) -> dict[str, Any]:
    return {o["output_key"]: o.get("output_value") for o in stack.outputs or ()}


async def test_a_config_runs_on_create_and_its_outputs_reach_the_stack_outputs(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_create", template())
        server = await server_of(rt, stack.id)
        given = await agent.given(server, "CREATE")
        values = inputs(given)
        assert given.config["config"] == SCRIPT and given.group == "script"
        assert given.hash is not None and re.fullmatch(r"[0-9a-f]{64}", given.hash)
        assert {k: values[k] for k in ("foo", "deploy_server_id", "deploy_action", "deploy_stack_id",
                                       "deploy_resource_name", "deploy_signal_transport",
                                       "deploy_signal_verb", "deploy_project_id")} == {
            "foo": "x", "deploy_server_id": server, "deploy_action": "CREATE",
            "deploy_stack_id": f"sw_create/{stack.id}", "deploy_resource_name": "deployment",
            "deploy_signal_transport": "HEAT_SIGNAL", "deploy_signal_verb": "POST",
            "deploy_project_id": "demo"}
        signal_path = f"/v1/demo/stacks/sw_create/{stack.id}/resources/deployment/signal"
        # Signed with the deployment's stack user: its password, which keystone mode checks.
        signed = f"{signal_path}?ember_signature={values['deploy_password']}"
        assert values["deploy_signal_id"].endswith(signed)
        assert values["deploy_auth_url"].endswith("/identity/v3")
        assert (await stack_of(rt, stack.id)).stack_status == "CREATE_IN_PROGRESS"  # waiting on the server
        assert await agent.answer(given, {"deploy_stdout": "hello x\n", "deploy_stderr": "",
                                          "deploy_status_code": 0, "result": "done", "other": 1}) == 200
        done = await settled(rt.pool, stack.id)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert outputs(done) == {"result": "done", "stdout": "hello x\n", "config": SCRIPT}
        ids = await physical_ids(rt, stack.id)
        row = await deployment(rt, str(ids["deployment"]))
        assert (row.status, row.status_reason, row.config_id) == ("COMPLETE", "Outputs received", given.id)
        assert row.output_values == {"result": "done", "deploy_stdout": "hello x\n", "deploy_stderr": "",
                                     "deploy_status_code": 0}
        stored = await config_row(rt, str(ids["config"]))
        assert stored is not None and stored.config["config"] == SCRIPT and stored.hash is None
        lines = await event_lines(rt.pool, stack.id)
        assert ("deployment", "SIGNAL_IN_PROGRESS", f"Signal: deployment {row.id} succeeded") in lines
        # A signal once it is over changes nothing, and says what it was.
        assert await agent.answer(given, {"deploy_status_code": 1}) == 200
        assert (await deployment(rt, str(ids["deployment"]))).status == "COMPLETE"
        assert ("deployment", "SIGNAL_COMPLETE", "Unknown") in await event_lines(rt.pool, stack.id)


async def test_an_update_of_its_inputs_runs_a_new_config_once_and_no_change_runs_nothing(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_update", template("x"))
        server = await server_of(rt, stack.id)
        first = await agent.given(server, "CREATE")
        await agent.answer(first, {"deploy_status_code": 0, "result": "one"})
        await settled(rt.pool, stack.id, status="CREATE_COMPLETE")

        await update(rt, stack.id, template("y"))
        second = await agent.given(server, "UPDATE")
        assert inputs(second)["foo"] == "y" and second.hash != first.hash
        assert await config_row(rt, first.id) is None  # the config it ran before is gone, as in Heat
        assert [c.id for _, c in await agent.configs(server)] == [second.id]  # one config to run
        await agent.answer(second, {"deploy_status_code": 0, "result": "two"})
        done = await settled(rt.pool, stack.id, status="UPDATE_COMPLETE")
        assert outputs(done)["result"] == "two"

        await update(rt, stack.id, template("y"))
        again = await settled(rt.pool, stack.id, status="UPDATE_COMPLETE")
        assert again.current_traversal != done.current_traversal
        [(row, config)] = await agent.configs(server)
        assert (config.id, row.status, row.action) == (second.id, "COMPLETE", "UPDATE")
        assert outputs(again)["result"] == "two"


async def test_a_failing_signal_fails_the_deployment_with_heats_reason_and_its_stderr(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_fail", template())
        server = await server_of(rt, stack.id)
        given = await agent.given(server, "CREATE")
        await agent.answer(given, {"deploy_stdout": "", "deploy_stderr": "disk full\n",
                                   "deploy_status_code": 2, "bad": "it broke"})
        done = await settled(rt.pool, stack.id)
        reason = ("Error: resources.deployment: Deployment to server failed: deploy_status_code : Deployment "
                  "exited with non-zero status code: 2, bad : it broke; deploy_stderr: disk full")
        assert (done.stack_status, done.status_reason) == ("CREATE_FAILED",
                                                           f"Resource CREATE failed: {reason}")
        rows = await resource_rows(rt.pool, stack.id)
        assert (rows["deployment"].status, rows["deployment"].status_reason) == ("FAILED", reason)
        row = await deployment(rt, str(rows["deployment"].physical_id))
        assert row.output_values["deploy_stderr"] == "disk full\n"  # what `stack failures list` shows
        assert row.status_reason == ("deploy_status_code : Deployment exited with non-zero status code: 2,"
                                     " bad : it broke")  # the deployment's own: Heat's
        lines = await event_lines(rt.pool, stack.id)
        assert ("deployment", "SIGNAL_IN_PROGRESS", f"Signal: deployment {row.id} failed") in lines


async def test_no_signal_completes_at_once_and_a_structured_deployment_fills_its_inputs(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    structured = {
        "structured": {"type": "OS::Heat::StructuredConfig", "properties": {
            "group": "os-apply-config", "config": {"a": {"get_input": "foo"}, "b": [{"get_input": "nope"}],
                                                    "c": {"get_input": "deploy_action"}}}},
        "sdeploy": {"type": "OS::Heat::StructuredDeployment", "properties": {
            "config": {"get_resource": "structured"}, "server": {"get_resource": "server"},
            "input_values": {"foo": "F"}, "signal_transport": "NO_SIGNAL", "name": "zz-last"}},
    }
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_nosignal", template(transport="NO_SIGNAL", extra=structured))
        done = await settled(rt.pool, stack.id)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert outputs(done)["result"] is None
        ids = await physical_ids(rt, stack.id)
        given = await agent.configs(str(ids["server"]))
        assert [(d.status, d.status_reason) for d, _ in given] == [
            ("COMPLETE", "Not waiting for outputs signal")] * 2
        by_name = {c.name: c for _, c in given}
        assert by_name["zz-last"].config["config"] == {"a": "F", "b": [None], "c": "CREATE"}
        assert "deploy_signal_id" not in inputs(by_name["zz-last"])


async def test_a_deployment_row_changed_without_a_signal_is_seen_by_the_wait(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    # PUT /software_deployments/<id> (or anything else that writes the row) ends the wait as a signal does.
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_put", template())
        server = await server_of(rt, stack.id)
        await agent.given(server, "CREATE")
        deployment_id = str((await physical_ids(rt, stack.id))["deployment"])
        async with rt.pool.acquire() as conn:
            await software_deployments.update(conn, uuid.UUID(deployment_id), status="COMPLETE",
                                              status_reason="by hand", output_values={"result": "put"})
        done = await settled(rt.pool, stack.id)
        assert (done.stack_status, outputs(done)["result"]) == ("CREATE_COMPLETE", "put")


async def test_delete_in_actions_runs_the_delete_config_before_the_deployment_goes(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_delete", template(actions=["CREATE", "DELETE"]))
        server = await server_of(rt, stack.id)
        await agent.answer(await agent.given(server, "CREATE"), {"deploy_status_code": 0})
        created = await settled(rt.pool, stack.id, status="CREATE_COMPLETE")
        ids = await physical_ids(rt, stack.id)

        await operations.delete_stack(rt.pool, rt.bus, created)
        goodbye = await agent.given(server, "DELETE")
        rows = await resource_rows(rt.pool, stack.id)
        # The deployment waits for the server (which goes after it); the config goes after both.
        assert {n: f"{r.action}_{r.status}" for n, r in rows.items()} == {
            "deployment": "DELETE_IN_PROGRESS", "server": "CREATE_COMPLETE", "config": "CREATE_COMPLETE"}
        assert (await stack_of(rt, stack.id)).stack_status == "DELETE_IN_PROGRESS"
        await agent.answer(goodbye, {"deploy_status_code": 0, "deploy_stdout": "bye"})
        await settled(rt.pool, stack.id, status="DELETE_COMPLETE")
        async with rt.pool.acquire() as conn:
            assert await software_deployments.get(conn, uuid.UUID(str(ids["deployment"]))) is None
        assert await config_row(rt, goodbye.id) is None
        assert await config_row(rt, str(ids["config"])) is None
        assert await agent.configs(server) == []


async def test_suspend_and_resume_run_their_configs_when_listed(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    unlisted = {"quiet": {"type": "OS::Heat::SoftwareDeployment", "properties": {
        "config": {"get_resource": "config"}, "server": {"get_resource": "other"}}},
        "other": {"type": "OS::Heat::None"}}
    async with running(settings, aiohttp_server) as (rt, agent):
        listed = template(actions=["CREATE", "SUSPEND", "RESUME"], extra=unlisted)
        stack = await create(rt, "sw_suspend", listed)
        server = await server_of(rt, stack.id)
        other = await server_of(rt, stack.id, "other")
        await agent.answer(await agent.given(server, "CREATE"), {"deploy_status_code": 0})
        await agent.answer(await agent.given(other, "CREATE"), {"deploy_status_code": 0})
        created = await settled(rt.pool, stack.id, status="CREATE_COMPLETE")

        await operations.stack_action(rt.pool, rt.bus, created, Action.SUSPEND)
        await agent.answer(await agent.given(server, "SUSPEND"), {"deploy_status_code": 0})
        suspended = await settled(rt.pool, stack.id, status="SUSPEND_COMPLETE")
        [(quiet, _)] = await agent.configs(other)
        assert (quiet.action, quiet.status) == ("CREATE", "COMPLETE")  # SUSPEND not among its actions

        await operations.stack_action(rt.pool, rt.bus, suspended, Action.RESUME)
        resumed = await agent.given(server, "RESUME")
        await agent.answer(resumed, {"deploy_status_code": 0})
        await settled(rt.pool, stack.id, status="RESUME_COMPLETE")


async def test_a_config_is_stored_replaced_on_change_and_kept_while_a_deployment_uses_it(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    def configs(script: str) -> dict[str, Any]:
        return {"heat_template_version": "2016-10-14", "resources": {
            "config": {"type": "OS::Heat::SoftwareConfig", "properties": {"config": script}},
            "cloud": {"type": "OS::Heat::CloudConfig", "properties": {"cloud_config": {"packages": ["git"]}}},
            "parts": {"type": "OS::Heat::MultipartMime", "properties": {"parts": [
                {"config": {"get_resource": "cloud"}}, {"config": script, "filename": "run.sh"}]}}},
            "outputs": {"parts": {"value": {"get_attr": ["parts", "config"]}}}}
    async with running(settings, aiohttp_server) as (rt, _):
        stack = await create(rt, "sw_configs", configs("one"))
        first = await settled(rt.pool, stack.id, status="CREATE_COMPLETE")
        ids = await physical_ids(rt, stack.id)
        stored = await config_row(rt, str(ids["config"]))
        assert stored is not None and (stored.name, stored.config["config"]) == (
            f"sw_configs-config-{_short(stored.name)}", "one")
        assert "#cloud-config\npackages:\n- git\n" in outputs(first)["parts"]
        assert 'Content-Type: text/run; charset="us-ascii"' in outputs(first)["parts"]

        await update(rt, stack.id, configs("two"))
        await settled(rt.pool, stack.id, status="UPDATE_COMPLETE")
        after = await physical_ids(rt, stack.id)
        assert after["config"] != ids["config"] and after["cloud"] == ids["cloud"]
        assert await config_row(rt, str(ids["config"])) is None

        async with rt.pool.acquire() as conn:  # a deployment made through the API uses it
            await software_deployments.insert(
                conn, project="demo", config_id=uuid.UUID(str(after["config"])), server_id="elsewhere",
                input_values={}, action="CREATE", status="COMPLETE")
            current = await stacks.get(conn, stack.id)
        assert current is not None
        await operations.delete_stack(rt.pool, rt.bus, current)
        failed = await settled(rt.pool, stack.id, status="DELETE_FAILED")
        assert failed.status_reason == (
            "Resource DELETE failed: InvalidRestrictedAction: resources.config: Software config with id "
            f"{after['config']} can not be deleted as it is referenced.")


async def test_a_real_agent_runs_the_config_once_per_change_and_its_outputs_reach_the_stack(
        settings: Settings, aiohttp_server: MakeServer, scratch_path: Path) -> None:
    # ``ember agent`` as a server's image would run it, told of its configs by the worker's push
    # (it polls only every ten minutes here), running them with the script hook.
    script = '#!/bin/sh\necho "hello $foo"\nprintf "got $foo" > "$heat_outputs_path.result"\n'
    def scripted(foo: str) -> dict[str, Any]:
        body = template(foo)
        body["resources"]["config"]["properties"]["config"] = script
        return body
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_agent", scripted("x"))
        server = await server_of(rt, stack.id)
        process = ember(["agent", "--api-url", agent.api_url, "--project", "demo", "--server-id", server,
                         "--workdir", str(scratch_path / "agent"), "--interval", "600",
                         "--nats-url", str(settings.nats_url), "--nats-prefix", settings.nats_prefix],
                        {"EMBER_LOG_FORMAT": "text"}, scratch_path / "agent.log")
        try:
            done = await settled(rt.pool, stack.id, timeout=60)
            assert done.stack_status == "CREATE_COMPLETE", done.status_reason
            assert (outputs(done)["result"], outputs(done)["stdout"]) == ("got x", "hello x\n")
            await update(rt, stack.id, scripted("y"))
            done = await settled(rt.pool, stack.id, status="UPDATE_COMPLETE", timeout=60)
            assert (outputs(done)["result"], outputs(done)["stdout"]) == ("got y", "hello y\n")
            assert terminate(process) == 0
        finally:
            if process.poll() is None:
                process.kill()
            kill_everything_under(scratch_path)
        runs = sorted(p.name for p in (scratch_path / "agent" / "runs").iterdir())
        assert len(runs) == 2  # one run per derived config, none twice


async def server_of(rt: Runtime, stack_id: uuid.UUID, name: str = "server") -> str:
    """The id of the stack's server (an OS::Heat::None: a deployment needs only an id) once made."""
    async def made() -> str | None:
        row = (await resource_rows(rt.pool, stack_id)).get(name)
        return row.physical_id if row is not None and row.status == "COMPLETE" else None
    return await eventually(made, what=f"the server {name}")


async def stack_of(rt: Runtime, stack_id: uuid.UUID) -> stacks.StackRow:
    async with rt.pool.acquire() as conn:
        found = await stacks.get(conn, stack_id)
    assert found is not None
    return found


def _short(name: str) -> str:
    return name.rsplit("-", 1)[-1]
