"""Stack users in keystone mode: a server's agent polls and signals with its own credentials alone.

The simulated cloud runs an ``ember agent`` per SOFTWARE_CONFIG server, given nothing but the
server's stack user (as its user data carries it) and no NATS: it gets its tokens from Ember's
/identity/v3 when the API asks for one. That user reaches its own resource and nothing else; the
deployment's signed signal URL works without a token; all of it stops with the stack.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp.test_utils import TestServer
from heatclient import client as heat_client
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from libs import operations
from libs.agent import settings as agent_settings
from libs.agent import sources
from libs.agent.credentials import Tokens
from libs.config import Settings
from libs.db import software_deployments
from libs.embedded.process import free_port
from libs.runtime import Runtime
from libs.simcloud.agents import AgentSettings
from libs.simcloud.state import SimSettings
from libs.template.request import StackRequest
from services.api.app import make_app
from services.api.identity_config import stable_id
from tests.integration.agent_support import kill_everything_under
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine, event_lines, resource_rows, settled
from tests.integration.software_support import deployment_template

USERS = """\
projects: [{name: alpha}, {name: beta}]
users:
  - {name: alice, password: wonderland, roles: {alpha: [member]}}
  - {name: bob, password: builder, roles: {beta: [member]}}
"""
ALPHA, BETA = stable_id("project", "alpha"), stable_id("project", "beta")
TEMPLATE = deployment_template("x", transport="HEAT_SIGNAL", stdout=False)


@contextlib.asynccontextmanager
async def _keystone_cloud(settings: Settings, database_url: str, scratch: Path
                          ) -> AsyncIterator[tuple[Runtime, str]]:
    """The engine and a keystone-mode api on a simulated cloud whose agents poll (no NATS)."""
    port = free_port()
    users = scratch / "users.yaml"
    users.write_text(USERS)
    agents = AgentSettings(api_url=f"http://127.0.0.1:{port}", root=scratch / "servers", interval=0.5)
    try:
        async with simulated_cloud(database_url, scratch, SimSettings(boot_seconds=0.2),
                                   agents=agents) as sim:
            keystone = dataclasses.replace(settings.api, auth="keystone", auth_config=users)
            mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port, cloud=sim.settings(),
                                       api=keystone)
            async with engine(mine) as rt:
                api = TestServer(make_app(mine), port=port)
                await api.start_server()
                try:
                    yield rt, f"http://127.0.0.1:{port}"
                finally:
                    await api.close()
    finally:
        kill_everything_under(scratch)


async def _token(http: aiohttp.ClientSession, base: str, user_id: str, password: str,
                 project: str = ALPHA) -> tuple[int, str]:
    # os-collect-config's heat collector's request (keystoneauth's v3 Password by user id and project id).
    body = {"auth": {"identity": {"methods": ["password"],
                                  "password": {"user": {"id": user_id, "password": password}}},
                     "scope": {"project": {"id": project}}}}
    async with http.post(f"{base}/identity/v3/auth/tokens", json=body) as r:
        if r.status == 201:
            assert (await r.json())["token"]["roles"] == [{"id": stable_id("role", "heat_stack_user"),
                                                          "name": "heat_stack_user"}]
        return r.status, r.headers.get("X-Subject-Token", "")


async def _status(http: aiohttp.ClientSession, method: str, url: str, token: str | None = None,
                  body: Any = None) -> tuple[int, Any]:
    headers = {"X-Auth-Token": token} if token else {}
    async with http.request(method, url, headers=headers, json=body) as r:
        return r.status, await r.json(content_type=None)


def _as_the_heat_collector(heat: dict[str, Any]) -> Any:
    """What os-collect-config's heat collector reads: keystoneauth by user id and project id, the
    orchestration endpoint of the catalog, heatclient's resource metadata of ``<name>/<id>``."""
    auth = v3.Password(auth_url=heat["auth_url"], user_id=heat["user_id"], password=heat["password"],
                       project_id=heat["project_id"])
    session = ks_session.Session(auth=auth)
    client = heat_client.Client("1", session=session)
    return client.resources.metadata(heat["stack_id"], heat["resource_name"])


async def _renews_its_token(http: aiohttp.ClientSession, base: str, server_id: str, heat: dict[str, Any],
                            scratch: Path) -> None:
    """An agent's token that stops working (expired, here revoked) is replaced at the next 401."""
    polling = agent_settings.AgentSettings(
        api_url=base, project=ALPHA, server_id=server_id, workdir=scratch, user_id=heat["user_id"],
        password=heat["password"], auth_url=heat["auth_url"])
    tokens = Tokens(http, polling)
    assert len(await sources.fetch(http, polling, tokens)) == 1
    first = tokens.token
    assert first is not None
    async with http.delete(f"{base}/identity/v3/auth/tokens",
                           headers={"X-Auth-Token": first, "X-Subject-Token": first}) as r:
        assert r.status == 204
    assert len(await sources.fetch(http, polling, tokens)) == 1
    assert tokens.token not in (None, first)


async def _hidden_from_resource_show(http: aiohttp.ClientSession, base: str, stack: str,
                                     password: str) -> None:
    """The project's users see the server without its agent's password (its metadata has it, as Heat's)."""
    async with http.post(f"{base}/identity/v3/auth/tokens", json={"auth": {
            "identity": {"methods": ["password"], "password": {"user": {
                "name": "alice", "domain": {"id": "default"}, "password": "wonderland"}}},
            "scope": {"project": {"id": ALPHA}}}}) as r:
        alice = r.headers["X-Subject-Token"]
    status, body = await _status(http, "GET", f"{stack}/resources/server", alice)
    assert status == 200 and password not in json.dumps(body)
    status, body = await _status(http, "GET", f"{stack}/resources/server/metadata", alice)
    assert status == 200 and body["metadata"]["os-collect-config"]["heat"]["password"] == password


async def _server_user_reaches_its_own_alone(http: aiohttp.ClientSession, base: str, stack: str,
                                             server_id: str, token: str) -> None:
    # Its own resource's metadata (the heat collector's read), its own server's deployments.
    status, body = await _status(http, "GET", f"{stack}/resources/server/metadata", token)
    assert status == 200 and body["metadata"]["os-collect-config"]["collectors"] == ["heat", "local"]
    status, body = await _status(http, "GET", f"{base}/v1/{ALPHA}/software_deployments/metadata/{server_id}",
                                 token)
    assert status == 200 and len(body["metadata"]) == 1
    # Nothing else, with Heat's policy refusal.
    for method, url in (("GET", f"{base}/v1/{ALPHA}/stacks"),
                        ("GET", f"{stack}/resources/deployment/metadata"),
                        ("POST", f"{stack}/resources/deployment/signal"),
                        ("GET", f"{stack}/resources/server"),
                        ("GET", f"{base}/v1/{ALPHA}/software_deployments/metadata/{uuid.uuid4()}")):
        status, body = await _status(http, method, url, token, body={} if method == "POST" else None)
        assert status == 403 and body["error"]["type"] == "Forbidden", (method, url, body)
        assert body["error"]["message"].startswith("You are not authorized to use "), body


async def _deployment_user_and_signed_url(http: aiohttp.ClientSession, base: str, stack: str, server_id: str,
                                          given: dict[str, Any]) -> str:
    """The deployment's stack user (HEAT_SIGNAL) reaches its own resource alone; its signed URL signals
    it with no token, and nothing else. Its token."""
    status, token = await _token(http, base, given["deploy_user_id"], given["deploy_password"])
    assert status == 201
    assert (await _status(http, "GET", f"{stack}/resources/deployment/metadata", token))[0] == 200
    assert (await _status(http, "GET", f"{stack}/resources/server/metadata", token))[0] == 403
    assert (await _status(http, "GET", f"{base}/v1/{ALPHA}/software_deployments/metadata/{server_id}",
                          token))[0] == 403
    signed = given["deploy_signal_id"]
    assert urlsplit(signed).path == urlsplit(f"{stack}/resources/deployment/signal").path
    assert (await _status(http, "POST", signed, body={"deploy_status_code": 0}))[0] == 200
    wrong = signed.replace("ember_signature=", "ember_signature=x")
    assert (await _status(http, "POST", wrong, body={}))[0] == 403
    other = f"{stack}/resources/server/signal?{urlsplit(signed).query}"
    assert (await _status(http, "POST", other, body={}))[0] == 403
    return token


async def test_an_agent_with_only_its_servers_stack_user_deploys_and_reaches_nothing_else(
        settings: Settings, database_url: str, scratch_path: Path) -> None:
    async with _keystone_cloud(settings, database_url, scratch_path) as (rt, base), \
            aiohttp.ClientSession() as http:
        made = await operations.create_stack(rt.pool, rt.bus, project=ALPHA, name="su",
                                             stack_request=StackRequest(template=TEMPLATE))
        done = await settled(rt.pool, made.id, timeout=90)
        # With no NATS, the agent hears of its config only by polling, which keystone mode answers
        # only with a token: got with the stack user its server's user data gave it.
        assert done.stack_status == "CREATE_COMPLETE", (done.status_reason,
                                                        await event_lines(rt.pool, made.id))
        assert {o["output_key"]: o.get("output_value") for o in done.outputs or ()} == {"result": "got x"}

        rows = await resource_rows(rt.pool, made.id)
        server_id = str(rows["server"].physical_id)
        heat = json.loads(rows["server"].data["os_collect_config"])["heat"]
        status, token = await _token(http, base, heat["user_id"], heat["password"])
        assert status == 201
        assert (await _token(http, base, heat["user_id"], "wrong"))[0] == 401
        assert (await _token(http, base, heat["user_id"], heat["password"], project=BETA))[0] == 401
        stack = f"{base}/v1/{ALPHA}/stacks/su/{made.id}"
        await _server_user_reaches_its_own_alone(http, base, stack, server_id, token)
        read = await asyncio.to_thread(_as_the_heat_collector, heat)
        assert len(read["deployments"]) == 1
        assert read["os-collect-config"]["heat"]["resource_name"] == "server"
        await _renews_its_token(http, base, server_id, heat, scratch_path)
        await _hidden_from_resource_show(http, base, stack, heat["password"])
        async with rt.pool.acquire() as conn:
            [(_, config)] = await software_deployments.configs_of_server(conn, server_id)
        given = {i["name"]: i.get("value") for i in config.config["inputs"]}
        deploy_token = await _deployment_user_and_signed_url(http, base, stack, server_id, given)

        # A resource removed by an update takes its credentials (its token, password, signed URL) along.
        kept = {k: v for k, v in TEMPLATE["resources"].items() if k != "deployment"}
        fewer = {**TEMPLATE, "resources": kept, "outputs": {}}
        await operations.update_stack(rt.pool, rt.bus, done, stack_request=StackRequest(template=fewer))
        updated = await settled(rt.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        assert updated.stack_status == "UPDATE_COMPLETE", updated.status_reason
        assert (await _status(http, "GET", f"{stack}/resources/deployment/metadata", deploy_token))[0] == 401
        assert (await _token(http, base, given["deploy_user_id"], given["deploy_password"]))[0] == 401
        assert (await _status(http, "POST", given["deploy_signal_id"], body={}))[0] == 403
        assert (await _status(http, "GET", f"{stack}/resources/server/metadata", token))[0] == 200

        await operations.delete_stack(rt.pool, rt.bus, updated)
        gone = await settled(rt.pool, made.id, status="DELETE_COMPLETE", timeout=60)
        assert gone.stack_status == "DELETE_COMPLETE", gone.status_reason
        # Gone with the stack: the server's token and password.
        assert (await _status(http, "GET", f"{stack}/resources/server/metadata", token))[0] == 401
        assert (await _token(http, base, heat["user_id"], heat["password"]))[0] == 401
