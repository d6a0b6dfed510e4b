"""Heat's ``software_configs`` routes: bodies, order, paging, projects, limits and refusals as Heat's.

What Heat 27.0.1 answered to the same requests (recorded in tests/heat_parity/cases/software/) is
what these expect; the parity cases replay the part of it that a recording can hold.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from libs.config import Settings
from services.api.app import make_app
from tests.integration.api_support import Client
from tests.integration.software_support import MEMBER, P, call, conforms, fault, make_config

MakeClient = Callable[[web.Application], Awaitable[Client]]

SCRIPT = {"name": "install", "group": "script", "config": "#!/bin/sh\necho $word > $heat_outputs_path.said",
          "inputs": [{"name": "word"}, {"name": "times", "type": "Number", "default": "3",
                                        "replace_on_change": True, "description": "how often"}],
          "outputs": [{"name": "said"}, {"name": "broken", "error_output": True}],
          "options": {"timeout": 60}}


@pytest.fixture
async def api(settings: Settings, aiohttp_client: MakeClient) -> Client:
    return await aiohttp_client(make_app(settings))


async def test_a_config_is_stored_shown_listed_and_deleted_as_heat_shows_it(api: Client) -> None:
    made = await make_config(api, SCRIPT)
    assert list(made) == ["id", "name", "group", "creation_time", "config", "inputs", "outputs", "options"]
    # Inputs and outputs as Heat stores them: types defaulted, a default of the input's type,
    # replace_on_change only when true, error_output always.
    assert made["inputs"] == [{"name": "word", "type": "String"},
                              {"name": "times", "description": "how often", "type": "Number", "default": 3,
                               "replace_on_change": True}]
    assert list(made["inputs"][1]) == ["name", "description", "type", "default", "replace_on_change"]
    assert made["outputs"] == [{"name": "said", "type": "String", "error_output": False},
                               {"name": "broken", "type": "String", "error_output": True}]
    assert (made["name"], made["group"], made["config"], made["options"]) == (
        "install", "script", SCRIPT["config"], {"timeout": 60})
    shown = await call(api, "GET", f"{P}/software_configs/{made['id']}")
    assert shown == {"software_config": made}
    conforms("SoftwareConfigShow", shown)
    listed = await call(api, "GET", f"{P}/software_configs")
    conforms("SoftwareConfigList", listed)
    # noauth's caller is an admin: Heat names each config's project in an admin's list.
    assert listed == {"software_configs": [{"id": made["id"], "name": "install", "group": "script",
                                            "creation_time": made["creation_time"], "project": "demo"}]}
    assert await call(api, "DELETE", f"{P}/software_configs/{made['id']}", status=204) is None
    gone = await call(api, "GET", f"{P}/software_configs/{made['id']}", status=404)
    assert fault(gone) == (404, "NotFound", "Software config with id {} not found")


async def test_what_a_body_leaves_out_is_heats_null_or_empty(api: Client) -> None:
    made = await make_config(api, {})
    assert {k: made[k] for k in ("name", "group", "config", "inputs", "outputs", "options")} == {
        "name": None, "group": None, "config": None, "inputs": [], "outputs": [], "options": {}}
    again = await make_config(api, {"config": {"structured": [1, 2]}, "inputs": None, "outputs": None})
    assert again["config"] == {"structured": [1, 2]} and again["inputs"] == [] and again["outputs"] == []


async def test_the_list_is_newest_first_and_pages_as_heats(api: Client) -> None:
    made = [(await make_config(api, {"name": f"c{i}"}))["id"] for i in range(5)]
    newest_first = list(reversed(made))

    async def ids(query: str) -> list[str]:
        return [c["id"] for c in (await call(api, "GET", f"{P}/software_configs{query}"))["software_configs"]]

    assert await ids("") == newest_first
    assert await ids("?limit=2") == newest_first[:2]
    assert await ids(f"?limit=2&marker={newest_first[1]}") == newest_first[2:4]
    assert await ids(f"?marker={newest_first[3]}") == newest_first[4:]
    # A marker Heat cannot find (or that is no id at all) is no marker; limit=0 is an empty page.
    assert await ids(f"?limit=2&marker={uuid.uuid4()}") == newest_first[:2]
    assert await ids("?marker=nope") == newest_first
    assert await ids("?limit=0") == []
    assert await ids("?limit=9&limit=1") == newest_first[:1]  # webob: the last value counts
    assert await ids("?limit=99999999999999999999999") == newest_first
    for query, message in (("?limit=abc", "Only integer is acceptable by 'limit'."),
                           ("?limit=07", "Only integer is acceptable by 'limit'."),
                           ("?limit=-1", "Value '-1' is invalid for 'limit' which only accepts non-negative"
                                         " integer."),
                           ("?global_tenant=1", 'Unrecognized value "1" for "global_tenant", acceptable'
                                                " values are: true, false.")):
        refused = await call(api, "GET", f"{P}/software_configs{query}", status=400)
        assert fault(refused) == (400, "HTTPBadRequest", message)
    # Heat's global_index policy denies everybody, admins too.
    denied = await call(api, "GET", f"{P}/software_configs?global_tenant=True", status=403)
    assert fault(denied) == (403, "Forbidden", "You are not authorized to use software_configs:global_index.")
    assert await ids("?global_tenant=false") == newest_first


async def test_a_member_sees_its_projects_configs_and_an_admin_every_ones(api: Client) -> None:
    ours = await make_config(api, {"name": "ours"}, MEMBER)
    theirs = (await call(api, "POST", "/v1/other/software_configs", {"name": "theirs"},
                         headers=MEMBER))["software_config"]
    mine = await call(api, "GET", f"{P}/software_configs", headers=MEMBER)
    assert mine == {"software_configs": [{k: ours[k] for k in ("id", "name", "group", "creation_time")}]}
    refused = await call(api, "GET", f"{P}/software_configs/{theirs['id']}", status=404, headers=MEMBER)
    assert fault(refused)[1] == "NotFound"
    await call(api, "DELETE", f"{P}/software_configs/{theirs['id']}", status=404, headers=MEMBER)
    every = await call(api, "GET", f"{P}/software_configs")
    assert {(c["name"], c["project"]) for c in every["software_configs"]} == {("ours", "demo"),
                                                                             ("theirs", "other")}
    shown = await call(api, "GET", f"{P}/software_configs/{theirs['id']}")
    assert shown["software_config"]["name"] == "theirs"
    reader = {"X-Roles": "reader"}
    await call(api, "GET", f"{P}/software_configs/{ours['id']}", headers=reader)
    for method, path in (("POST", "/software_configs"), ("DELETE", f"/software_configs/{ours['id']}")):
        denied = await call(api, method, f"{P}{path}", {} if method == "POST" else None, 403, headers=reader)
        action = "create" if method == "POST" else "delete"
        assert fault(denied)[2] == f"You are not authorized to use software_configs:{action}."


async def test_a_config_a_deployment_uses_is_kept(api: Client) -> None:
    config = await make_config(api, {"name": "used"})
    deployment = (await call(api, "POST", f"{P}/software_deployments",
                             {"config_id": config["id"], "server_id": "s1"}))["software_deployment"]
    refused = await call(api, "DELETE", f"{P}/software_configs/{config['id']}", status=400)
    # Heat answers 500 here (its fault map lacks InvalidRestrictedAction); its type and words are kept.
    referenced = f"Software config with id {config['id']} can not be deleted as it is referenced."
    assert fault(refused) == (400, "InvalidRestrictedAction", referenced)
    await call(api, "DELETE", f"{P}/software_deployments/{deployment['id']}", status=204)
    await call(api, "DELETE", f"{P}/software_configs/{config['id']}", status=204)


async def test_heats_limits_per_project_hold_members_and_not_admins(settings: Settings,
                                                                    aiohttp_client: MakeClient) -> None:
    small = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, max_software_configs_per_tenant=2, max_software_deployments_per_tenant=1))
    api = await aiohttp_client(make_app(small))
    first = await make_config(api, {"name": "a"}, MEMBER)
    await make_config(api, {"name": "b"}, MEMBER)
    # The limit is checked before the body is read, as in Heat.
    refused = await call(api, "POST", f"{P}/software_configs", {"inputs": "bad"}, 400, headers=MEMBER)
    assert fault(refused) == (400, "RequestLimitExceeded", "Request limit exceeded: You have reached the"
                              " maximum software configs per tenant, 2. Please delete some configs.")
    await make_config(api, {"name": "admin's"})  # an admin is not held to it
    await call(api, "POST", "/v1/other/software_configs", {"name": "elsewhere"}, headers=MEMBER)
    deploy = {"config_id": first["id"], "server_id": "s1"}
    await call(api, "POST", f"{P}/software_deployments", deploy, headers=MEMBER)
    refused = await call(api, "POST", f"{P}/software_deployments", deploy, 400, headers=MEMBER)
    assert fault(refused)[2] == ("Request limit exceeded: You have reached the maximum software deployments"
                                 " per tenant, 1. Please delete some deployments.")
    await call(api, "POST", f"{P}/software_deployments", deploy)
