"""Deployment groups through the api and the engine: batches, the batch hook, attribute maps.

Deployments with ``NO_SIGNAL`` complete as soon as their derived config is stored, so the
batches run with no agent; the attribute test answers for each server as its agent would,
through the api's resource signal of each member.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from libs.config import Settings
from libs.db import software_deployments
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from tests.integration.api_support import Client, MakeClient, pausing_engine, settled, stack_of
from tests.integration.engine_support import hot, resource_rows
from tests.support import eventually

pytestmark = pytest.mark.skipif("OS::Heat::SoftwareDeployment" not in default_registry(),
                                reason="the member type OS::Heat::SoftwareDeployment is not registered yet")

SCRIPT = "#!/bin/sh\necho \"v is $v\"\n"


@pytest.fixture
async def running(settings: Settings, aiohttp_client: MakeClient) -> AsyncIterator[tuple[Client, Runtime]]:
    async with pausing_engine(settings, aiohttp_client) as running:
        yield running


def _servers(count: int) -> dict[str, str]:
    return {f"s{i:02}": f"server-{i:02}" for i in range(count)}


def _group(servers: dict[str, str], value: str, *, batch: int, transport: str = "NO_SIGNAL",
           kind: str = "OS::Heat::SoftwareDeploymentGroup") -> dict[str, Any]:
    return {"type": kind, "properties": {
        "config": {"get_resource": "config"}, "servers": servers, "input_values": {"v": value},
        "signal_transport": transport}, "update_policy": {"rolling_update": {"max_batch_size": batch}}}


def _config(**extra: Any) -> dict[str, Any]:
    return {"type": "OS::Heat::SoftwareConfig", "properties": {
        "group": "script", "config": SCRIPT, "inputs": [{"name": "v"}], **extra}}


async def _create(api: Client, name: str, template: dict[str, Any], environment: dict[str, Any] | None = None
                  ) -> str:
    async with api.post("/v1/demo/stacks", json={"stack_name": name, "template": template,
                                                  "environment": environment or {}}) as r:
        assert r.status == 201, await r.text()
        return f"/v1/demo/stacks/{name}/{(await r.json())['stack']['id']}"


async def _signal(api: Client, url: str, body: Any) -> None:
    async with api.post(url, json=body) as r:
        assert r.status == 200, await r.text()


async def _held_at(api: Client, path: str, hook: str) -> None:
    """Wait until the group alone is paused, at ``hook``."""
    async def probe() -> bool:
        paused = (await stack_of(api, path))["ember_paused"]
        return [(p["resource"], p["hook"]) for p in paused] == [("group", hook)]
    await eventually(probe, timeout=60, what=f"the group paused at {hook}")


async def _release(api: Client, path: str, hook: str) -> None:
    await _signal(api, f"{path}/resources/group/signal", {"unset_hook": hook.partition("@")[0]})

    async def moved_on() -> bool:
        return all(p["hook"] != hook for p in (await stack_of(api, path))["ember_paused"])
    await eventually(moved_on, timeout=30, what=f"the group past {hook}")


async def _members(api: Client, path: str) -> dict[str, str]:
    """The group's members and their status."""
    async with api.get(f"{path}/resources?nested_depth=1") as r:
        listed = (await r.json())["resources"]
    return {x["resource_name"]: x["resource_status"] for x in listed if x.get("parent_resource") == "group"}


async def _deployments(rt: Runtime) -> dict[str, dict[str, Any]]:
    """Each server's deployment: its input values."""
    async with rt.pool.acquire() as conn:
        rows = await software_deployments.page(conn, "demo")
    return {row.server_id: row.input_values for row in rows}


async def _member_ids(rt: Runtime, path: str) -> dict[str, str | None]:
    """The group's members and their physical ids (their deployments' ids)."""
    group = (await resource_rows(rt.pool, uuid.UUID(path.rsplit("/", 1)[1])))["group"]
    members = await resource_rows(rt.pool, uuid.UUID(group.physical_id or ""))
    return {name: row.physical_id for name, row in members.items()}


async def test_a_group_of_thirty_servers_deploys_in_three_batches_held_between_them(
        running: tuple[Client, Runtime]) -> None:
    api, rt = running
    servers = _servers(30)
    template = hot({"config": _config(), "group": _group(servers, "a", batch=10)},
                   outputs={"codes": {"value": {"get_attr": ["group", "deploy_status_codes"]}}})
    # Held before it starts, so the batch breakpoint is there before the first batch ends.
    path = await _create(api, "thirty", template, {"resource_registry": {"resources": {
        "group": {"hooks": "pre-create"}}}})
    await _held_at(api, path, "pre-create")
    async with api.post(f"{path}/breakpoints", json={"resource": "group", "hooks": ["create:batch"]}) as r:
        assert r.status == 201, await r.text()
    await _release(api, path, "pre-create")

    for batch, made in ((1, 10), (2, 20)):
        await _held_at(api, path, f"create:batch@{batch}")
        # The batch is done and the next has not started: its servers only have their deployment.
        assert await _members(api, path) == dict.fromkeys(list(servers)[:made], "CREATE_COMPLETE")
        assert set(await _deployments(rt)) == {servers[n] for n in list(servers)[:made]}
        assert (await stack_of(api, path))["stack_status"] == "CREATE_IN_PROGRESS"
        await _release(api, path, f"create:batch@{batch}")

    done = await settled(api, path, "CREATE_COMPLETE", timeout=60)
    assert await _members(api, path) == dict.fromkeys(servers, "CREATE_COMPLETE")
    assert await _deployments(rt) == {server: {"v": "a"} for server in servers.values()}
    [codes] = [o["output_value"] for o in done["outputs"] if o["output_key"] == "codes"]
    assert set(codes) == set(servers)


async def test_a_rolling_update_of_the_input_values_goes_a_batch_at_a_time(
        running: tuple[Client, Runtime]) -> None:
    api, rt = running
    servers = _servers(6)
    path = await _create(api, "rolling", hot({"config": _config(), "group": _group(servers, "a", batch=2)}))
    await settled(api, path, "CREATE_COMPLETE", timeout=60)
    made = await _member_ids(rt, path)
    async with api.post(f"{path}/breakpoints", json={"resource": "group", "hooks": ["update:batch"]}) as r:
        assert r.status == 201, await r.text()
    async with api.patch(path, json={"template": hot({"config": _config(),
                                                      "group": _group(servers, "b", batch=2)})}) as r:
        assert r.status == 202, await r.text()

    for batch, updated in ((1, 2), (2, 4)):
        await _held_at(api, path, f"update:batch@{batch}")
        given = await _deployments(rt)
        # The last servers in the map first, as Heat's group updates its highest places first.
        assert given == {s: {"v": "b" if i >= len(servers) - updated else "a"}
                         for i, s in enumerate(servers.values())}
        await _release(api, path, f"update:batch@{batch}")
    await settled(api, path, "UPDATE_COMPLETE", timeout=60)
    assert await _deployments(rt) == {server: {"v": "b"} for server in servers.values()}
    # The members are the same deployments, updated in place.
    assert await _member_ids(rt, path) == made and set(made) == set(servers)


async def test_the_groups_attributes_are_maps_of_what_each_server_answered(
        running: tuple[Client, Runtime]) -> None:
    api, rt = running
    servers = {"web": "server-web", "db": "server-db"}
    template = hot({"config": _config(outputs=[{"name": "result"}]),
                    "group": _group(servers, "a", batch=2, transport="HEAT_SIGNAL")}, outputs={
        "stdouts": {"value": {"get_attr": ["group", "deploy_stdouts"]}},
        "stderrs": {"value": {"get_attr": ["group", "deploy_stderrs"]}},
        "codes": {"value": {"get_attr": ["group", "deploy_status_codes"]}},
        "results": {"value": {"get_attr": ["group", "result"]}},
        "db_stdout": {"value": {"get_attr": ["group", "deploy_stdouts", "db"]}},
        "web_result": {"value": {"get_attr": ["group", "resource.web.result"]}},
    })
    path = await _create(api, "answers", template)
    for name, server in servers.items():
        async def waiting(server: str = server) -> str | None:
            async with rt.pool.acquire() as conn:
                given = await software_deployments.configs_of_server(conn, server)
            return next((urlsplit(i["value"]).path for d, c in given if d.status == "IN_PROGRESS"
                         for i in c.config["inputs"] if i["name"] == "deploy_signal_id"), None)
        # The member's own signal URL, in the group's nested stack.
        url = await eventually(waiting, timeout=30, what=f"{server}'s deployment waiting for its answer")
        assert url.endswith(f"/resources/{name}/signal")
        await _signal(api, url, {"deploy_stdout": f"v is a on {name}", "deploy_stderr": "",
                                 "deploy_status_code": 0, "result": f"{name} ok"})
    done = await settled(api, path, "CREATE_COMPLETE", timeout=60)
    assert {o["output_key"]: o["output_value"] for o in done["outputs"]} == {
        "stdouts": {"web": "v is a on web", "db": "v is a on db"}, "stderrs": {"web": "", "db": ""},
        "codes": {"web": 0, "db": 0}, "results": {"web": "web ok", "db": "db ok"},
        "db_stdout": "v is a on db", "web_result": "web ok"}
    # Outputs PUT later on one member's deployment reach the group's attributes (Heat reads them).
    async with rt.pool.acquire() as conn:
        [(deployment, _)] = await software_deployments.configs_of_server(conn, servers["db"])
    later = {"deploy_stdout": "again on db", "deploy_stderr": "", "deploy_status_code": 0,
             "result": "db later"}
    async with api.put(f"/v1/demo/software_deployments/{deployment.id}", json={"output_values": later}) as r:
        assert r.status == 200, await r.text()
    shown = {o["output_key"]: o["output_value"] for o in (await stack_of(api, path))["outputs"]}
    assert (shown["db_stdout"], shown["stdouts"], shown["results"]) == (
        "again on db", {"web": "v is a on web", "db": "again on db"}, {"web": "web ok", "db": "db later"})


async def test_a_structured_group_fills_each_servers_structured_config(
        running: tuple[Client, Runtime]) -> None:
    api, rt = running
    servers = {"a": "server-a", "b": "server-b"}
    config = {"type": "OS::Heat::StructuredConfig", "properties": {
        "group": "Heat::Ungrouped", "config": {"greeting": {"get_input": "v"}}}}
    path = await _create(api, "structured", hot({"config": config, "group": _group(
        servers, "hi", batch=1, kind="OS::Heat::StructuredDeploymentGroup")}))
    await settled(api, path, "CREATE_COMPLETE", timeout=60)
    async with api.get(f"{path}/resources?nested_depth=1") as r:
        types = {x["resource_name"]: x["resource_type"] for x in (await r.json())["resources"]
                 if x.get("parent_resource") == "group"}
    assert types == dict.fromkeys(servers, "OS::Heat::StructuredDeployment")
    async with rt.pool.acquire() as conn:
        for server in servers.values():
            [(deployment, derived)] = await software_deployments.configs_of_server(conn, server)
            assert derived.config["config"] == {"greeting": "hi"}
            values = {i["name"]: i.get("value") for i in derived.config["inputs"]}
            assert values["deploy_server_id"] == server
            assert deployment.status == "COMPLETE"
