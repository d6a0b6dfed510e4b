"""Heat's ``software_deployments`` routes, a server's deployments metadata, and bodies Heat cannot take."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from libs.config import Settings
from libs.db import software_configs
from libs.simcloud.state import SimSettings
from services.api.app import make_app
from services.api.keys import RUNTIME
from tests.integration.api_support import Client, settled
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine, hot
from tests.integration.software_support import MEMBER, P, call, conforms, deploy, fault, make_config


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> Client:
    return await aiohttp_client(make_app(settings))


async def test_a_deployment_is_made_shown_updated_and_deleted_as_heat_does(api: Client) -> None:
    config = await make_config(api, {"name": "one", "group": "script", "outputs": [{"name": "said"}]})
    other = await make_config(api, {"name": "two"})
    made = await deploy(api, {"config_id": config["id"], "server_id": "web-1", "input_values": {"word": "hi"},
                              "action": "CREATE", "status": "IN_PROGRESS",
                              "status_reason": "Deploy data available"})
    assert list(made) == ["id", "server_id", "input_values", "output_values", "action", "status",
                          "status_reason", "config_id", "creation_time"]
    assert {k: v for k, v in made.items() if k not in ("id", "creation_time")} == {
        "server_id": "web-1", "input_values": {"word": "hi"}, "output_values": None, "action": "CREATE",
        "status": "IN_PROGRESS", "status_reason": "Deploy data available", "config_id": config["id"]}
    path = f"{P}/software_deployments/{made['id']}"
    shown = await call(api, "GET", path)
    assert shown == {"software_deployment": made}
    conforms("SoftwareDeploymentShow", shown)

    # What an agent sends back; Heat leaves alone what is absent or falsy, and keys it does not take.
    answer = await call(api, "PUT", path, {"output_values": {"said": "hi"}, "status": "COMPLETE",
                                           "status_reason": "Outputs received", "input_values": {},
                                           "action": "", "server_id": "elsewhere", "foo": 1})
    done = answer["software_deployment"]
    assert {k: done[k] for k in ("server_id", "input_values", "output_values", "action", "status",
                                 "status_reason", "config_id")} == {
        "server_id": "web-1", "input_values": {"word": "hi"}, "output_values": {"said": "hi"},
        "action": "CREATE", "status": "COMPLETE", "status_reason": "Outputs received",
        "config_id": config["id"]}
    assert list(done)[-1] == "updated_time"
    moved = (await call(api, "PUT", path, {"config_id": other["id"], "action": "UPDATE"}))[
        "software_deployment"]
    assert (moved["config_id"], moved["action"], moved["status"]) == (other["id"], "UPDATE", "COMPLETE")
    missing = await call(api, "PUT", path, {"config_id": str(uuid.uuid4())}, status=404)
    assert fault(missing) == (404, "NotFound", "Software config with id {} not found")
    assert (await call(api, "GET", path))["software_deployment"]["config_id"] == other["id"]

    listed = await call(api, "GET", f"{P}/software_deployments")
    conforms("SoftwareDeploymentList", listed)
    assert [d["id"] for d in listed["software_deployments"]] == [made["id"]]
    await call(api, "DELETE", path, status=204)
    gone = await call(api, "GET", path, status=404)
    assert fault(gone) == (404, "NotFound", "Deployment with id {} not found")
    await call(api, "DELETE", path, status=404)
    await call(api, "PUT", path, {"status": "COMPLETE"}, status=404)


async def test_what_a_create_leaves_out_is_shown_as_heat_shows_it(api: Client) -> None:
    config = await make_config(api, {"name": "c"})
    made = await deploy(api, {"config_id": config["id"], "server_id": "s"})
    # Heat stores str(None) as the reason of a deployment made without one.
    assert (made["input_values"], made["action"], made["status"], made["status_reason"]) == ({}, None, None,
                                                                                             "None")
    reasoned = await deploy(api, {"config_id": config["id"], "server_id": "s", "status_reason": {"a": 1}})
    assert reasoned["status_reason"] == "{'a': 1}"


async def test_deployments_are_listed_oldest_first_and_by_server(api: Client) -> None:
    config = await make_config(api, {"name": "c"})
    made = [await deploy(api, {"config_id": config["id"], "server_id": server}) for server in ("a", "b", "a")]

    async def ids(query: str) -> list[str]:
        listed = await call(api, "GET", f"{P}/software_deployments{query}")
        return [d["id"] for d in listed["software_deployments"]]

    assert await ids("") == [d["id"] for d in made]
    assert await ids("?server_id=a") == [made[0]["id"], made[2]["id"]]
    assert await ids("?server_id=") == [d["id"] for d in made]  # Heat: an empty one filters nothing
    assert await ids("?server_id=none") == []


async def test_a_servers_metadata_is_its_configs_by_name_with_their_hash(api: Client) -> None:
    configs = {name: await make_config(api, {"name": name, "group": "script", "config": f"echo {name}"})
               for name in ("zz", "aa", "Mm")}
    pool = api.app[RUNTIME].pool
    async with pool.acquire() as conn:
        body = {"config": "echo bb", "outputs": [], "options": {},
                "inputs": [{"name": "deploy_action", "type": "String", "value": "CREATE"}]}
        derived = await software_configs.insert(conn, project="demo", name="bb", group="script", config=body,
                                                hash="f" * 64)
    for config_id in [c["id"] for c in configs.values()] + [str(derived.id)]:
        await deploy(api, {"config_id": config_id, "server_id": "web-1"})
    await deploy(api, {"config_id": configs["aa"]["id"], "server_id": "web-2"})
    metadata = await call(api, "GET", f"{P}/software_deployments/metadata/web-1")
    conforms("DeploymentMetadata", metadata)
    items = metadata["metadata"]
    assert [i["name"] for i in items] == ["Mm", "aa", "bb", "zz"]  # by name as Python sorts: code points
    assert items[0] == configs["Mm"]
    assert items[2]["ember_hash"] == "f" * 64
    assert items[2]["inputs"] == [{"name": "deploy_action", "type": "String", "value": "CREATE"}]
    assert all("ember_hash" not in i for i in items if i["name"] != "bb")
    assert await call(api, "GET", f"{P}/software_deployments/metadata/nothing-here") == {"metadata": []}


async def test_a_stack_user_project_sees_the_deployments_made_for_it(api: Client) -> None:
    config = await make_config(api, {"name": "c"}, MEMBER)
    theirs = await deploy(api, {"config_id": config["id"], "server_id": "s1",
                                "stack_user_project_id": "agents"}, MEMBER)
    ours_only = await deploy(api, {"config_id": config["id"], "server_id": "s1"}, MEMBER)
    as_agents = "/v1/agents/software_deployments"
    listed = await call(api, "GET", as_agents, headers=MEMBER)
    assert [d["id"] for d in listed["software_deployments"]] == [theirs["id"]]
    metadata = await call(api, "GET", f"{as_agents}/metadata/s1", headers=MEMBER)
    assert [i["id"] for i in metadata["metadata"]] == [config["id"]]  # the config, though not its project's
    updated = await call(api, "PUT", f"{as_agents}/{theirs['id']}", {"status": "COMPLETE"}, headers=MEMBER)
    assert updated["software_deployment"]["status"] == "COMPLETE"
    await call(api, "GET", f"{as_agents}/{ours_only['id']}", status=404, headers=MEMBER)
    await call(api, "GET", f"/v1/stranger/software_deployments/{theirs['id']}", status=404, headers=MEMBER)
    assert (await call(api, "GET", "/v1/stranger/software_deployments", headers=MEMBER)) == {
        "software_deployments": []}
    # A member of another project can name no config of ours in a deployment.
    refused = await call(api, "POST", "/v1/stranger/software_deployments",
                         {"config_id": config["id"], "server_id": "s2"}, 404, headers=MEMBER)
    assert fault(refused)[2] == "Software config with id {} not found"
    assert len((await call(api, "GET", f"{P}/software_deployments"))["software_deployments"]) == 2


def _deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


async def test_a_reader_may_look_and_may_not_change_as_heats_policies(api: Client) -> None:
    config = await make_config(api, {"name": "c"})
    made = await deploy(api, {"config_id": config["id"], "server_id": "s"})
    reader = {"X-Roles": "reader"}
    one = f"{P}/software_deployments/{made['id']}"
    for path in (f"{P}/software_deployments", one, f"{P}/software_deployments/metadata/s"):
        await call(api, "GET", path, headers=reader)
    for method, path, action in (("POST", f"{P}/software_deployments", "create"), ("PUT", one, "update"),
                                 ("DELETE", one, "delete")):
        denied = await call(api, method, path, None if method == "DELETE" else {}, 403, headers=reader)
        assert fault(denied) == (403, "Forbidden",
                                 f"You are not authorized to use software_deployments:{action}.")


@dataclasses.dataclass(frozen=True)
class Refused:
    name: str
    method: str
    route: str  # "configs", "deployments" or "one" (a deployment)
    body: Any
    status: int
    error: str
    message: str  # a part of the message, naming what is wrong


ROWS = (
    Refused("inputs not a list", "POST", "configs", {"inputs": "x"}, 400, "HTTPBadRequest",
            "inputs: Software Config I/O Schema must be in a list"),
    Refused("an output not a map", "POST", "configs", {"outputs": [1]}, 400, "HTTPBadRequest",
            "outputs[0]: Software Config I/O Schema must be a dict"),
    Refused("an input without a name", "POST", "configs", {"inputs": [{}]}, 400, "ValueError",
            "Property error: inputs[0]: Property name not assigned"),
    Refused("an input of no type", "POST", "configs", {"inputs": [{"name": "a", "type": "Foo"}]}, 400,
            "ValueError", 'inputs[0].type: "Foo" is not an allowed value'),
    Refused("a default of no type", "POST", "configs",
            {"inputs": [{"name": "a", "type": "Foo", "default": 1}]}, 400, "InvalidSchemaError",
            "Invalid type (Foo)"),
    Refused("a default not a number", "POST", "configs",
            {"inputs": [{"name": "a", "type": "Number", "default": "abc"}]}, 400, "ValueError",
            "inputs[0].default: could not convert string to float: 'abc'"),
    Refused("a name of 256 characters", "POST", "configs", {"name": "n" * 256}, 400, "HTTPBadRequest",
            "name: at most 255 characters"),
    Refused("a name that is a map", "POST", "configs", {"name": {"a": 1}}, 400, "HTTPBadRequest", "name:"),
    Refused("options that are text", "POST", "configs", {"options": "x"}, 400, "HTTPBadRequest", "options:"),
    Refused("a body that is a list", "POST", "configs", [1], 400, "HTTPBadRequest", "malformed"),
    Refused("a body that is null", "POST", "deployments", None, 400, "HTTPBadRequest", "malformed"),
    Refused("no server", "POST", "deployments", {"config_id": "{config}"}, 400, "HTTPBadRequest",
            "server_id"),
    Refused("a server id of 37 characters", "POST", "deployments",
            {"config_id": "{config}", "server_id": "s" * 37}, 400, "HTTPBadRequest", "server_id: at most 36"),
    Refused("a server id that is a map", "POST", "deployments",
            {"config_id": "{config}", "server_id": {"a": 1}}, 400, "HTTPBadRequest", "server_id:"),
    Refused("no config", "POST", "deployments", {"server_id": "s"}, 404, "NotFound",
            "Software config with id"),
    Refused("a config id that is a list", "POST", "deployments",
            {"config_id": ["{config}"], "server_id": "s"}, 404, "NotFound", "Software config with id"),
    Refused("input values that are a list", "POST", "deployments",
            {"config_id": "{config}", "server_id": "s", "input_values": [1]}, 400, "HTTPBadRequest",
            "input_values: a map"),
    Refused("a status that is a number", "POST", "deployments",
            {"config_id": "{config}", "server_id": "s", "status": 5}, 400, "HTTPBadRequest", "status:"),
    Refused("a stack user project of 65 characters", "POST", "deployments",
            {"config_id": "{config}", "server_id": "s", "stack_user_project_id": "p" * 65}, 400, "Invalid",
            'Data supplied was not valid: "stack_user_project_id" should be no more than 64 characters'),
    Refused("a stack user project that is a number", "POST", "deployments",
            {"config_id": "{config}", "server_id": "s", "stack_user_project_id": 5}, 400, "HTTPBadRequest",
            "stack_user_project_id:"),
    Refused("output values that are text", "PUT", "one", {"output_values": "x"}, 400, "HTTPBadRequest",
            "output_values: a map"),
    Refused("an action of 256 characters", "PUT", "one", {"action": "A" * 256}, 400, "HTTPBadRequest",
            "action: at most 255"),
    Refused("a config id naming nothing", "PUT", "one", {"config_id": "nope"}, 404, "NotFound",
            "Software config with id"),
    Refused("a text with NUL", "PUT", "one", {"status_reason": "a\u0000b"}, 400, "StackValidationFailed",
            "status_reason: text may not contain a NUL character"),
    Refused("a config nested 150 levels", "POST", "configs", {"config": _deep(150)}, 400,
            "RequestLimitExceeded", "config"),
)


def _substituted(value: Any, config_id: str) -> Any:
    if isinstance(value, str):
        return value.replace("{config}", config_id)
    if isinstance(value, list):
        return [_substituted(v, config_id) for v in value]
    if isinstance(value, dict):
        return {k: _substituted(v, config_id) for k, v in value.items()}
    return value


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
async def test_a_body_heat_cannot_take_is_refused_naming_the_field(api: Client, row: Refused) -> None:
    config = await make_config(api, {"name": "c"})
    deployment = await deploy(api, {"config_id": config["id"], "server_id": "s"})
    path = {"configs": f"{P}/software_configs", "deployments": f"{P}/software_deployments",
            "one": f"{P}/software_deployments/{deployment['id']}"}[row.route]
    body = _substituted(row.body, config["id"])
    async with api.request(row.method, path, json=body) as r:
        answer = await r.json()
        assert r.status == row.status, answer
    code, error, message = fault(answer)
    assert (code, error) == (row.status, row.error) and row.message in message, answer
    # Nothing was stored: the deployment is as it was, the config alone.
    shown = await call(api, "GET", f"{P}/software_deployments/{deployment['id']}")
    assert shown["software_deployment"] == deployment
    assert len((await call(api, "GET", f"{P}/software_configs"))["software_configs"]) == 1


async def test_a_servers_resource_metadata_carries_its_deployments(
        settings: Settings, database_url: str, tmp_path: Path,
        aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    template = hot({"web": {"type": "OS::Nova::Server", "properties": {
        "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}]}},
        "spare": {"type": "OS::Heat::None"},
        "polled": {"type": "OS::Nova::Server", "properties": {
            "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}],
            "user_data_format": "SOFTWARE_CONFIG"}}})
    async with simulated_cloud(database_url, tmp_path, SimSettings(boot_seconds=0.1)) as sim:
        with_cloud = dataclasses.replace(settings, cloud=sim.settings())
        async with engine(with_cloud):
            api = await aiohttp_client(make_app(with_cloud))
            created = await call(api, "POST", f"{P}/stacks", {"stack_name": "host", "template": template},
                                 status=201)
            stack = f"{P}/stacks/host/{created['stack']['id']}"
            await settled(api, stack, "CREATE_COMPLETE")
            server_id = (await call(api, "GET", f"{stack}/resources/web"))["resource"]["physical_resource_id"]
            bare = await call(api, "GET", f"{stack}/resources/web/metadata")
            assert bare == {"metadata": {"deployments": []}}
            for name in ("second", "first"):
                config = await make_config(api, {"name": name, "group": "script", "config": f"echo {name}"})
                await deploy(api, {"config_id": config["id"], "server_id": server_id, "action": "CREATE",
                                   "status": "IN_PROGRESS"})
            metadata = (await call(api, "GET", f"{stack}/resources/web/metadata"))["metadata"]
            conforms("Metadata", {"metadata": metadata})
            served = await call(api, "GET", f"{P}/software_deployments/metadata/{server_id}")
            assert metadata == {"deployments": served["metadata"]}
            assert [d["name"] for d in metadata["deployments"]] == ["first", "second"]
            assert await call(api, "GET", f"{stack}/resources/spare/metadata") == {"metadata": {}}
            # A SOFTWARE_CONFIG server is told where to poll: Heat's POLL_SERVER_HEAT shape, Ember's API.
            polled = (await call(api, "GET", f"{stack}/resources/polled/metadata"))["metadata"]
            assert polled["deployments"] == []
            # Its stack user's credentials, made for it (a user id and a password of its own).
            collect = polled["os-collect-config"]
            heat = collect["heat"]
            assert isinstance(heat.pop("user_id"), str) and isinstance(heat.pop("password"), str)
            assert collect == {"collectors": ["heat", "local"], "heat": {
                "auth_url": f"{with_cloud.api_url}/identity/v3",
                "project_id": "demo", "stack_id": stack.removeprefix(f"{P}/stacks/"),
                "resource_name": "polled", "region_name": None}}


# Values of every JSON kind, for every field of every body these routes read.
HOSTILE: tuple[Any, ...] = (None, 0, -1, 2.5, True, "", "x", "x" * 300, [], [None], [[]], [{}], {},
                            {"x": None}, {"name": {"a": 1}})
CONFIG_FIELDS = ("name", "group", "config", "inputs", "outputs", "options", "other")
DEPLOYMENT_FIELDS = ("config_id", "server_id", "input_values", "output_values", "action", "status",
                     "status_reason", "stack_user_project_id", "other")


async def test_no_body_gets_a_5xx_from_the_software_routes(api: Client) -> None:
    config = await make_config(api, {"name": "c"})
    deployment = await deploy(api, {"config_id": config["id"], "server_id": "s"})
    good = {"config_id": config["id"], "server_id": "s"}
    sends: list[tuple[str, str, Any]] = []
    for value in HOSTILE:
        sends += [("POST", f"{P}/software_configs", {field: value}) for field in CONFIG_FIELDS]
        sends += [("POST", f"{P}/software_configs", {"inputs": [{"name": "i", field: value}]})
                  for field in ("type", "default", "description", "replace_on_change", "value")]
        sends += [("POST", f"{P}/software_configs", {"inputs": [{"name": "i", "type": t, "default": value}]})
                  for t in ("String", "Number", "CommaDelimitedList", "Json", "Boolean")]
        sends += [("POST", f"{P}/software_deployments", {**good, field: value})
                  for field in DEPLOYMENT_FIELDS]
        sends += [("PUT", f"{P}/software_deployments/{deployment['id']}", {field: value})
                  for field in DEPLOYMENT_FIELDS]
        sends += [(method, f"{P}/software_{kind}", value) for method, kind in (
            ("POST", "configs"), ("POST", "deployments")) if not isinstance(value, dict)]
    problems = []
    for method, path, body in sends:
        async with api.request(method, path, json=body) as response:
            answer = await response.json()
            fine = response.status < 300 or (400 <= response.status < 500 and set(answer) == {
                "code", "title", "explanation", "error"} and isinstance(answer["error"].get("message"), str))
            if not fine:
                problems.append(f"{method} {path} {body!r}: {response.status} {answer}")
    assert len(sends) > 500 and not problems, "\n".join(problems)
