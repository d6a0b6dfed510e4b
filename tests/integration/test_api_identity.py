"""Keystone mode: tokens from Ember's own Identity v3, checked on every request; projects kept apart."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from heatclient import client as heat_client
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from libs.config import Settings
from services.api.app import make_app
from services.api.identity_config import stable_id
from services.api.keys import RUNTIME
from tests.integration.engine_support import engine

Client = TestClient[web.Request, web.Application]
USERS = """\
projects: [{name: alpha}, {name: beta}]
users:
  - {name: alice, password: wonderland, roles: {alpha: [member]}}
  - {name: bob, password: builder, roles: {beta: [member]}}
  - {name: rita, password: reads, roles: {alpha: [reader]}}
"""
ALPHA, BETA = stable_id("project", "alpha"), stable_id("project", "beta")
TEMPLATE = {"heat_template_version": "2016-10-14", "resources": {"r": {"type": "OS::Heat::None"}}}


def keystone_settings(settings: Settings, directory: Path, ttl: int = 3600) -> Settings:
    path = directory / "users.yaml"
    path.write_text(USERS)
    return dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, auth="keystone", auth_config=path, token_ttl_seconds=ttl))


@pytest.fixture
async def api(settings: Settings, tmp_path: Path,
              aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> Client:
    return await aiohttp_client(make_app(keystone_settings(settings, tmp_path)))


def _password(user: str, password: str, project: str) -> dict[str, Any]:
    return {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": user, "domain": {"name": "Default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"name": "Default"}}}}}


async def _token(api: Client, user: str, password: str, project: str) -> str:
    async with api.post("/identity/v3/auth/tokens", json=_password(user, password, project)) as r:
        assert r.status == 201, await r.text()
        body = await r.json()
        token = r.headers["X-Subject-Token"]
    assert body["token"]["project"]["id"] == stable_id("project", project)
    orchestration = next(s for s in body["token"]["catalog"] if s["type"] == "orchestration")
    assert {e["url"] for e in orchestration["endpoints"]} == {
        f"http://{api.host}:{api.port}/v1/{stable_id('project', project)}"}
    return token


async def test_tokens_gate_every_project_route(api: Client) -> None:
    alice = await _token(api, "alice", "wonderland", "alpha")
    async with api.get(f"/v1/{ALPHA}/stacks") as r:
        assert r.status == 401 and (await r.json())["error"]["type"] == "HTTPUnauthorized"
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 200 and (await r.json()) == {"stacks": []}
    async with api.get(f"/v1/{BETA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 403 and (await r.json())["error"]["type"] == "Forbidden"
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": "made-up"}) as r:
        assert r.status == 401
    async with api.post("/identity/v3/auth/tokens", json=_password("alice", "wrong", "alpha")) as r:
        assert r.status == 401
        assert (await r.json())["error"]["message"] == "The request you have made requires authentication."
    async with api.post("/identity/v3/auth/tokens", json=_password("alice", "wonderland", "beta")) as r:
        assert r.status == 401  # no role there

    headers = {"X-Auth-Token": alice, "X-Subject-Token": alice}
    async with api.get("/identity/v3/auth/tokens", headers=headers) as r:
        assert r.status == 200 and (await r.json())["token"]["user"]["name"] == "alice"
    async with api.get("/identity/v3/auth/projects", headers={"X-Auth-Token": alice}) as r:
        assert [p["name"] for p in (await r.json())["projects"]] == ["alpha"]
    async with api.delete("/identity/v3/auth/tokens", headers=headers) as r:
        assert r.status == 204
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 401  # revoked


async def test_a_reader_may_look_but_not_change(api: Client) -> None:
    rita = await _token(api, "rita", "reads", "alpha")
    headers = {"X-Auth-Token": rita}
    async with api.get(f"/v1/{ALPHA}/stacks", headers=headers) as r:
        assert r.status == 200
    async with api.post(f"/v1/{ALPHA}/validate", headers=headers, json={"template": TEMPLATE}) as r:
        assert r.status == 200
    async with api.post(f"/v1/{ALPHA}/stacks", headers=headers,
                        json={"stack_name": "nope", "template": TEMPLATE}) as r:
        assert r.status == 403
        assert (await r.json())["error"]["message"] == "You are not authorized to complete this action."


async def test_an_expired_token_is_refused(settings: Settings, tmp_path: Path,
                                           aiohttp_client: Callable[[web.Application], Awaitable[Client]]
                                           ) -> None:
    app = make_app(keystone_settings(settings, tmp_path, ttl=60))
    api = await aiohttp_client(app)
    token = await _token(api, "alice", "wonderland", "alpha")
    pool = app[RUNTIME].pool
    async with pool.acquire() as conn:  # an hour passes
        await conn.execute("UPDATE auth_tokens SET expires_at = now() - interval '1 second'")
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": token}) as r:
        assert r.status == 401


def _keystoneauth_session(url: str) -> None:
    def heat(user: str, password: str, project: str) -> Any:
        auth = v3.Password(auth_url=f"{url}/identity/v3", username=user, password=password,
                           project_name=project, user_domain_name="Default", project_domain_name="Default")
        session = ks_session.Session(auth=auth)
        assert session.get_endpoint(service_type="orchestration", interface="public") == (
            f"{url}/v1/{stable_id('project', project)}")
        return heat_client.Client("1", session=session)

    alice, bob = heat("alice", "wonderland", "alpha"), heat("bob", "builder", "beta")
    created = alice.stacks.create(stack_name="secret", template=TEMPLATE)
    assert [s.stack_name for s in alice.stacks.list()] == ["secret"]
    assert list(bob.stacks.list()) == []
    try:
        bob.stacks.get(created["stack"]["id"])
    except Exception as exc:
        assert "could not be found" in str(exc)
    else:
        raise AssertionError("bob saw alice's stack")


async def test_keystoneauth_and_heatclient_against_ember_identity(
        settings: Settings, tmp_path: Path,
        aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]) -> None:
    mine = keystone_settings(settings, tmp_path)
    async with engine(mine):
        server = await aiohttp_server(make_app(mine))
        await asyncio.to_thread(_keystoneauth_session, str(server.make_url("")).rstrip("/"))
