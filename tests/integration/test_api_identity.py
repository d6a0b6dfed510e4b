"""Keystone mode: tokens from Ember's own Identity v3, checked on every request; projects kept apart."""

from __future__ import annotations

import asyncio
import dataclasses
import re
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
from services.api.identity_config import AuthConfigError, stable_id
from services.api.keys import RUNTIME
from tests.integration.engine_support import engine

Client = TestClient[web.Request, web.Application]
USERS = """\
projects: [{name: alpha}, {name: beta}]
users:
  - {name: alice, password: wonderland, roles: {alpha: [member]}}
  - {name: bob, password: builder, roles: {beta: [member]}}
  - {name: rita, password: reads, roles: {alpha: [reader]}}
  - {name: carol, id: c4r01, password: both, roles: {alpha: [member], beta: [member, admin]}}
"""
ALPHA, BETA = stable_id("project", "alpha"), stable_id("project", "beta")
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
TEMPLATE = {"heat_template_version": "2016-10-14", "resources": {"r": {"type": "OS::Heat::None"}}}


def keystone_settings(settings: Settings, directory: Path, ttl: int = 3600, users: str = USERS) -> Settings:
    path = directory / "users.yaml"
    path.write_text(users)
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
        # Heat 27.0.1's answer to a token of another project, recorded: a bare webob 403.
        assert r.status == 403 and (await r.json())["error"] == {
            "type": "HTTPForbidden", "message": "Access was denied to this resource.", "traceback": None}
    async with api.get(f"/v1/{ALPHA}/stacks?global_tenant=true", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 403 and (await r.json())["error"]["message"] == (
            "You are not authorized to use stacks:global_index.")
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
    async with api.post(f"/v1/{ALPHA}/stacks/preview", headers=headers,
                        json={"stack_name": "maybe", "template": TEMPLATE}) as r:
        assert r.status == 200
    # As Heat's policy: validating a template is for members (test_api_identity_refusals: every route).
    async with api.post(f"/v1/{ALPHA}/validate", headers=headers, json={"template": TEMPLATE}) as r:
        assert r.status == 403
        assert (await r.json())["error"]["message"] == (
            "You are not authorized to use stacks:validate_template.")
    async with api.post(f"/v1/{ALPHA}/stacks", headers=headers,
                        json={"stack_name": "nope", "template": TEMPLATE}) as r:
        assert r.status == 403
        assert (await r.json())["error"]["message"] == "You are not authorized to use stacks:create."


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


async def test_version_discovery(api: Client) -> None:
    base = f"http://{api.host}:{api.port}"
    async with api.get("/identity") as r:
        assert r.status == 300
        [v] = (await r.json())["versions"]["values"]
    async with api.get("/identity/v3") as r:
        assert r.status == 200
        assert (await r.json())["version"] == v
    assert v["id"] == "v3.14" and v["status"] == "stable"
    assert v["links"] == [{"rel": "self", "href": f"{base}/identity/v3/"}]
    assert v["media-types"] == [{"base": "application/json",
                                 "type": "application/vnd.openstack.identity-v3+json"}]


async def test_the_token_body_as_keystoneauth_reads_it(api: Client) -> None:
    by_ids = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"id": "c4r01", "password": "both"}}}, "scope": {"project": {"id": BETA}}}}
    async with api.post("/identity/v3/auth/tokens", json=by_ids) as r:
        assert r.status == 201
        token = (await r.json())["token"]
    assert token["methods"] == ["password"]
    assert token["user"] == {"id": "c4r01", "name": "carol", "domain": {"id": "default", "name": "Default"},
                             "password_expires_at": None}
    assert token["project"] == {"id": BETA, "name": "beta", "domain": {"id": "default", "name": "Default"}}
    assert sorted(role["name"] for role in token["roles"]) == ["admin", "member"]
    assert all(role["id"] for role in token["roles"])
    assert TIMESTAMP.match(token["issued_at"]) and TIMESTAMP.match(token["expires_at"])
    assert token["expires_at"] > token["issued_at"] and len(token["audit_ids"]) == 1
    base = f"http://{api.host}:{api.port}"
    services = {s["type"]: s for s in token["catalog"]}
    assert services["orchestration"]["name"] == "heat" and services["identity"]["name"] == "keystone"
    for kind, url in (("orchestration", f"{base}/v1/{BETA}"), ("identity", f"{base}/identity/v3")):
        endpoints = services[kind]["endpoints"]
        assert sorted(e["interface"] for e in endpoints) == ["admin", "internal", "public"]
        assert {(e["url"], e["region"], e["region_id"]) for e in endpoints} == {
            (url, "RegionOne", "RegionOne")}


async def test_what_the_token_endpoint_refuses(api: Client) -> None:
    def password(user: dict[str, Any], scope: Any = None) -> dict[str, Any]:
        auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": user}}}
        return {"auth": auth if scope is None else {**auth, "scope": scope}}

    alice = {"name": "alice", "password": "wonderland"}
    unauthorized = [
        password({**alice, "domain": {"name": "Elsewhere"}}),
        password({**alice, "domain": {"id": "other"}}),
        password(alice, {"project": {"name": "alpha", "domain": {"name": "Elsewhere"}}}),
        password(alice, {"project": {"name": "no-such-project", "domain": {"name": "Default"}}}),
        password({"name": "nobody", "password": "x"}),
        password({"id": "c4r01", "password": "wonderland"}),
        {"auth": {"identity": {"methods": ["token"], "token": {"id": "made-up"}}}},
    ]
    for body in unauthorized:
        async with api.post("/identity/v3/auth/tokens", json=body) as r:
            assert r.status == 401, body
            assert (await r.json())["error"] == {"code": 401, "title": "Unauthorized", "message":
                                                 "The request you have made requires authentication."}
    malformed: list[Any] = [
        {}, {"auth": {}}, {"auth": {"identity": {"methods": []}}},
        {"auth": {"identity": {"methods": ["totp"], "totp": {}}}},
        {"auth": {"identity": {"methods": ["password"], "password": "wonderland"}}},
        password({"password": "wonderland"}),
        password({"name": ["alice"], "password": "wonderland"}),
        password(alice, {"domain": {"id": "default"}}),
        [1, 2],
    ]
    for body in malformed:
        async with api.post("/identity/v3/auth/tokens", json=body) as r:
            assert r.status == 400, body
            error = (await r.json())["error"]
            assert error["code"] == 400 and error["title"] == "Bad Request" and error["message"]
    async with api.post("/identity/v3/auth/tokens", data=b"{not json") as r:
        assert r.status == 400


async def test_validate_revoke_and_list_projects(api: Client) -> None:
    carol = await _token(api, "carol", "both", "beta")  # an admin may act on another's token
    alice = await _token(api, "alice", "wonderland", "alpha")
    carol_on_alice = {"X-Auth-Token": carol, "X-Subject-Token": alice}
    async with api.head("/identity/v3/auth/tokens", headers=carol_on_alice) as r:
        assert r.status == 200 and r.headers["X-Subject-Token"] == alice
    async with api.get("/identity/v3/auth/tokens", headers=carol_on_alice) as r:
        assert r.status == 200 and (await r.json())["token"]["user"]["name"] == "alice"
    for caller in ({}, {"X-Auth-Token": "made-up"}):
        async with api.get("/identity/v3/auth/tokens", headers={**caller, "X-Subject-Token": alice}) as r:
            assert r.status == 401
        async with api.get("/identity/v3/auth/projects", headers=caller) as r:
            assert r.status == 401
        async with api.delete("/identity/v3/auth/tokens", headers={**caller, "X-Subject-Token": alice}) as r:
            assert r.status == 401
    for method in (api.get, api.head):
        async with method("/identity/v3/auth/tokens", headers={"X-Auth-Token": carol,
                                                               "X-Subject-Token": "made-up"}) as r:
            assert r.status == 404
    async with api.get("/identity/v3/auth/projects", headers={"X-Auth-Token": carol}) as r:
        assert sorted(p["name"] for p in (await r.json())["projects"]) == ["alpha", "beta"]

    async with api.delete("/identity/v3/auth/tokens", headers=carol_on_alice) as r:
        assert r.status == 204
    async with api.get("/identity/v3/auth/tokens", headers=carol_on_alice) as r:
        assert r.status == 404
    async with api.delete("/identity/v3/auth/tokens", headers=carol_on_alice) as r:
        assert r.status == 404  # revoked once only
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 401


async def test_a_token_traded_for_another_scope_keeps_its_expiry(api: Client) -> None:
    unscoped = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": "carol", "domain": {"id": "default"}, "password": "both"}}}}}
    async with api.post("/identity/v3/auth/tokens", json=unscoped) as r:
        assert r.status == 201
        first, token = (await r.json())["token"], r.headers["X-Subject-Token"]
    assert first["project"]["name"] == "alpha"  # no scope asked: the first project with a role
    rescope = {"auth": {"identity": {"methods": ["token"], "token": {"id": token}},
                        "scope": {"project": {"name": "beta", "domain": {"name": "Default"}}}}}
    async with api.post("/identity/v3/auth/tokens", json=rescope) as r:
        assert r.status == 201
        second, beta_token = (await r.json())["token"], r.headers["X-Subject-Token"]
    assert second["project"]["id"] == BETA and second["methods"] == ["token"]
    assert second["expires_at"] == first["expires_at"]
    async with api.get(f"/v1/{BETA}/stacks", headers={"X-Auth-Token": beta_token}) as r:
        assert r.status == 200


async def test_authenticated_before_routed(api: Client) -> None:
    alice = await _token(api, "alice", "wonderland", "alpha")
    async with api.get(f"/v1/{ALPHA}/no-such-route") as r:
        assert r.status == 401 and r.headers["WWW-Authenticate"] == 'Keystone uri="/identity/v3"'
    async with api.get(f"/v1/{ALPHA}/no-such-route", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 404
    async with api.get(f"/v1/{BETA}/no-such-route", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 403


async def test_any_api_process_checks_what_another_issued(
        settings: Settings, tmp_path: Path,
        aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = await aiohttp_client(make_app(keystone_settings(settings, tmp_path / "one")))
    alice = await _token(one, "alice", "wonderland", "alpha")
    carol = await _token(one, "carol", "both", "beta")
    # The second process was restarted with a file where alice lost her role on alpha.
    changed = USERS.replace("roles: {alpha: [member]}}", "roles: {beta: [reader]}}")
    assert changed != USERS
    two = await aiohttp_client(make_app(keystone_settings(settings, tmp_path / "two", users=changed)))
    async with two.get(f"/v1/{BETA}/stacks", headers={"X-Auth-Token": carol}) as r:
        assert r.status == 200
    async with two.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 401
    async with one.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 200


async def test_noauth_serves_no_identity(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    api = await aiohttp_client(make_app(settings))
    for path in ("/identity", "/identity/v3", "/identity/v3/auth/tokens"):
        async with api.get(path) as r:
            assert r.status == 404
    async with api.get(f"/v1/{ALPHA}/stacks") as r:
        assert r.status == 200


@pytest.mark.parametrize(("users", "field"), [
    ("projects: [{name: a}]\nusers: [{name: u, password: p, roles: {b: [member]}}]\n", "users[0].roles.b"),
    ("projects: [{name: a}]\nusers: [{name: u, roles: {a: [member]}}]\n", "users[0].password"),
    ("projects: [{name: a}]\nusers: [{name: u, pasword: p}]\n", "users[0].pasword"),
    ("projects: [{name: a}]\nusers: [{name: u, password: p, roles: {a: member}}]\n", "users[0].roles.a"),
    ("projects: [{name: a}, {name: a}]\nusers: [{name: u, password: p}]\n", "projects[1]"),
    ("projects: [{id: x}]\nusers: [{name: u, password: p}]\n", "projects[0].name"),
    ("projects: [{name: a}]\nuser: []\n", "user"),
    ("projects: [{name: a}]\n", "users"),
    ("projects: {a: {}}\nusers: [{name: u, password: p}]\n", "projects"),
    ("users: [{name: u, password: \"\"}]\n", "users[0].password"),
    ("projects: [{name: a}\n", "file"),
    ("- just a list\n", "file"),
])
def test_a_bad_config_names_the_file_and_the_field(settings: Settings, tmp_path: Path, users: str,
                                                   field: str) -> None:
    mine = keystone_settings(settings, tmp_path, users=users)
    with pytest.raises(AuthConfigError) as caught:
        make_app(mine)
    assert str(caught.value).startswith(f"{mine.api.auth_config}: {field}: ")


def test_a_missing_config_file_is_named(settings: Settings, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.yaml"
    mine = dataclasses.replace(settings, api=dataclasses.replace(settings.api, auth="keystone",
                                                                 auth_config=missing))
    with pytest.raises(AuthConfigError, match=f"^{re.escape(str(missing))}: file: "):
        make_app(mine)
