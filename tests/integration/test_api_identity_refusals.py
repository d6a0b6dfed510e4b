"""Keystone mode refuses as Heat and Keystone do: a reader's changes, another's token, a dead stream."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.db import events
from services.api.app import make_app
from services.api.identity_config import stable_id
from services.api.keys import RUNTIME
from tests.integration.engine_support import engine, settled

Client = TestClient[web.Request, web.Application]
MakeClient = Callable[[web.Application], Awaitable[Client]]
USERS = """\
projects: [{name: alpha}, {name: beta}]
users:
  - {name: alice, password: wonderland, roles: {alpha: [member]}}
  - {name: rita, password: reads, roles: {alpha: [reader]}}
  - {name: mona, password: member, roles: {alpha: [member]}}
  - {name: root, password: toor, roles: {alpha: [member], beta: [admin]}}
  - {name: svc, password: service, roles: {beta: [service]}}
"""
ALPHA = stable_id("project", "alpha")
# A resource named "validate": its PATCH path ends in /validate, as a template validation's does.
TEMPLATE = {"heat_template_version": "2016-10-14",
            "resources": {"validate": {"type": "OS::Heat::None"}}, "outputs": {"o": {"value": 1}}}


def _settings(settings: Settings, directory: Path, **api: Any) -> Settings:
    path = directory / "users.yaml"
    path.write_text(USERS)
    return dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, auth="keystone", auth_config=path, **api))


async def _token(api: Client, user: str, password: str, project: str = "alpha") -> str:
    body = {"auth": {"identity": {"methods": ["password"], "password": {
        "user": {"name": user, "domain": {"id": "default"}, "password": password}}},
        "scope": {"project": {"name": project, "domain": {"id": "default"}}}}}
    async with api.post("/identity/v3/auth/tokens", json=body) as r:
        assert r.status == 201, await r.text()
        return r.headers["X-Subject-Token"]


def _heat_403(action: str) -> dict[str, Any]:
    # Recorded from Heat 27.0.1 (new policy defaults), asked with X-Roles: reader.
    return {"code": 403, "title": "Forbidden", "explanation": "Access was denied to this resource.",
            "error": {"type": "Forbidden", "traceback": None,
                      "message": f"You are not authorized to use {action}."}}


P, S, R = "/v1/{p}", "/v1/{p}/stacks/identity-s/{id}", "/v1/{p}/stacks/identity-s/{id}/resources/validate"
NONE_TYPE = "/v1/{p}/resource_types/OS::Heat::None"
# What Heat 27.0.1 refuses a reader (403, the policy named), recorded with X-Roles: reader...
HEAT_REFUSES_A_READER = [
    ("POST", f"{P}/validate", {"template": TEMPLATE}, "stacks:validate_template"),
    ("POST", f"{P}/stacks", {"stack_name": "nope", "template": TEMPLATE}, "stacks:create"),
    ("PUT", S, {"template": TEMPLATE}, "stacks:update"),
    ("PATCH", S, {}, "stacks:update_patch"),
    ("DELETE", S, None, "stacks:delete"),
    ("PUT", f"{S}/preview", {"template": TEMPLATE}, "stacks:preview_update"),
    ("PATCH", f"{S}/preview", {}, "stacks:preview_update_patch"),
    ("PATCH", R, {"mark_unhealthy": True, "resource_status_reason": "x"}, "resource:mark_unhealthy"),
    *(("POST", f"{S}/actions", {action: None}, f"actions:{action}")
      for action in ("suspend", "resume", "cancel_update", "cancel_without_rollback")),
    ("POST", f"{S}/snapshots", {}, "stacks:snapshot"),
    ("DELETE", f"{S}/snapshots/{uuid.UUID(int=1)}", None, "stacks:delete_snapshot"),
    ("POST", f"{S}/snapshots/{uuid.UUID(int=1)}/restore", {}, "stacks:restore_snapshot"),
    ("DELETE", f"{S}/abandon", None, "stacks:abandon"),
    ("GET", f"{S}/export", None, "stacks:export"),
    ("GET", f"{NONE_TYPE}/template", None, "stacks:generate_template"),
    ("GET", f"{P}/services", None, "service:index"),
    # ...and Ember's own routes that change something.
    ("POST", f"{S}/breakpoints", {"resource": "validate"}, "breakpoints:create"),
    ("DELETE", f"{S}/breakpoints", None, "breakpoints:delete"),
    ("DELETE", f"{S}/breakpoints/{uuid.UUID(int=1)}", None, "breakpoints:delete"),
    ("POST", f"{S}/step", {}, "breakpoints:step"),
    ("POST", f"{S}/continue", {}, "breakpoints:continue"),
    ("POST", f"{P}/subscriptions", {"url": "http://127.0.0.1:9/"}, "subscriptions:create"),
    ("POST", f"{S}/subscriptions", {"url": "http://127.0.0.1:9/"}, "subscriptions:create"),
    ("DELETE", f"{P}/subscriptions/{uuid.UUID(int=1)}", None, "subscriptions:delete"),
]
# What a reader may do, with Heat 27.0.1's status (Ember's own routes: Ember's).
A_READER_MAY = [
    ("GET", S, None, 200), ("GET", f"{S}/template", None, 200), ("GET", f"{S}/environment", None, 200),
    ("GET", f"{S}/files", None, 200), ("GET", f"{S}/outputs", None, 200),
    ("GET", f"{S}/outputs/o", None, 200),
    ("GET", f"{S}/events", None, 200), ("GET", f"{S}/resources", None, 200), ("GET", R, None, 200),
    ("GET", f"{R}/metadata", None, 200), ("GET", f"{R}/events", None, 200),
    ("POST", f"{R}/signal", {}, 400),  # allowed, but OS::Heat::None takes no signal
    ("GET", f"{S}/snapshots", None, 200), ("GET", f"{S}/snapshots/{uuid.UUID(int=1)}", None, 404),
    ("GET", f"{P}/resource_types", None, 200), ("GET", NONE_TYPE, None, 200),
    ("GET", f"{P}/template_versions", None, 200),
    ("GET", f"{P}/template_versions/heat_template_version.2016-10-14/functions", None, 200),
    ("GET", f"{P}/build_info", None, 200), ("GET", f"{P}/stacks", None, 200),
    ("GET", f"{P}/stacks/detail", None, 200),
    ("POST", f"{P}/stacks/preview", {"stack_name": "identity-p", "template": TEMPLATE}, 200),
    ("PATCH", f"{P}/stacks/identity-s", {}, 302),  # the lookup redirects; the PATCH it leads to is refused
    ("POST", f"{S}/actions", {}, 400),  # the body is checked before the policy: "No action specified"
    ("GET", f"{S}/breakpoints", None, 200), ("GET", f"{S}/paused", None, 200),
    ("GET", f"{P}/subscriptions", None, 200), ("GET", f"{S}/subscriptions", None, 200),
    ("GET", f"{S}/events/stream?until=settled", None, 200),
    ("POST", f"{S}/actions", {"check": None}, 200),  # last: it starts a check
]


async def test_a_reader_is_refused_by_route_what_heat_refuses_a_reader(
        settings: Settings, tmp_path: Path, aiohttp_client: MakeClient) -> None:
    mine = _settings(settings, tmp_path)
    async with engine(mine):
        app = make_app(mine)
        api = await aiohttp_client(app)
        alice, rita = await _token(api, "alice", "wonderland"), await _token(api, "rita", "reads")
        async with api.post(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice},
                            json={"stack_name": "identity-s", "template": TEMPLATE}) as r:
            stack_id = (await r.json())["stack"]["id"]
        await settled(app[RUNTIME].pool, uuid.UUID(stack_id), status="CREATE_COMPLETE")

        async def call(token: str, method: str, path: str, body: Any) -> tuple[int, Any]:
            url = path.format(p=ALPHA, id=stack_id)
            async with api.request(method, url, headers={"X-Auth-Token": token}, json=body,
                                   allow_redirects=False) as r:
                return r.status, await r.json() if r.content_type == "application/json" else None

        for method, path, body, action in HEAT_REFUSES_A_READER:
            assert await call(rita, method, path, body) == (403, _heat_403(action)), (method, path)
        for method, path, body, status in A_READER_MAY:
            assert (await call(rita, method, path, body))[0] == status, (method, path)
        # What the reader was refused, a member may: the PATCH .../resources/validate.
        assert await call(alice, "PATCH", R, {"mark_unhealthy": False}) == (200, {})


async def test_only_a_tokens_owner_or_an_admin_may_see_or_revoke_it(
        settings: Settings, tmp_path: Path, aiohttp_client: MakeClient) -> None:
    api = await aiohttp_client(make_app(_settings(settings, tmp_path)))
    alice = await _token(api, "alice", "wonderland")

    async def ask(method: str, caller: str, subject: str) -> tuple[int, Any]:
        async with api.request(method, "/identity/v3/auth/tokens",
                               headers={"X-Auth-Token": caller, "X-Subject-Token": subject}) as r:
            return r.status, await r.json() if method != "HEAD" and r.status != 204 else None

    # Keystone's answers and bodies: 403 names the policy (identity:<action>).
    def refused(action: str) -> tuple[int, Any]:
        return 403, {"error": {"code": 403, "title": "Forbidden", "message":
                               f"You are not authorized to perform the requested action: identity:{action}."}}

    others = [await _token(api, "rita", "reads"), await _token(api, "mona", "member"),
              await _token(api, "root", "toor")]  # a reader, a member, and an admin elsewhere
    for other in others:
        assert await ask("GET", other, alice) == refused("validate_token")
        assert (await ask("HEAD", other, alice))[0] == 403
        assert await ask("DELETE", other, alice) == refused("revoke_token")
        assert (await ask("GET", other, "made-up"))[0] == 404  # the subject is looked up first
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 200  # still live

    service = await _token(api, "svc", "service", "beta")  # a service may validate, not check nor revoke
    status, body = await ask("GET", service, alice)
    assert status == 200 and body["token"]["user"]["name"] == "alice"
    assert (await ask("HEAD", service, alice))[0] == 403
    assert await ask("DELETE", service, alice) == refused("revoke_token")

    assert (await ask("GET", alice, alice))[0] == 200  # the owner may, with any of her tokens
    assert (await ask("HEAD", await _token(api, "alice", "wonderland"), alice))[0] == 200
    admin = await _token(api, "root", "toor", "beta")
    assert (await ask("HEAD", admin, alice))[0] == 200
    assert (await ask("DELETE", admin, alice))[0] == 204
    async with api.get(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": alice}) as r:
        assert r.status == 401


async def _stream_until_it_ends(api: Client, path: str, token: str, act: Callable[[], Awaitable[None]]
                                ) -> str:
    async with api.get(f"{path}/events/stream", headers={"X-Auth-Token": token}) as r:
        assert r.status == 200
        await act()
        # Bounded: a stream that outlives its token fails here instead of hanging.
        return (await asyncio.wait_for(r.content.read(), timeout=15)).decode()


async def _stack(api: Client, token: str) -> str:
    async with api.post(f"/v1/{ALPHA}/stacks", headers={"X-Auth-Token": token},
                        json={"stack_name": "streamed", "template": TEMPLATE}) as r:
        assert r.status == 201
        return f"/v1/{ALPHA}/stacks/streamed/{(await r.json())['stack']['id']}"


def _ended_for_the_token(text: str) -> None:
    last = text.strip().split("\n\n")[-1]
    assert last.startswith("event: error\ndata: ") and '"type":"HTTPUnauthorized"' in last, text


@pytest.mark.parametrize("how", ["revoked", "expired"])
async def test_the_event_stream_ends_when_its_token_does(
        settings: Settings, tmp_path: Path, aiohttp_client: MakeClient, how: str) -> None:
    # A 2 s token for "expired" (the config allows 60 s at least; the test sets it directly).
    api = await aiohttp_client(make_app(_settings(settings, tmp_path, token_recheck_seconds=0.1,
                                                  token_ttl_seconds=2 if how == "expired" else 3600)))
    alice = await _token(api, "alice", "wonderland")
    path = await _stack(api, await _token(api, "mona", "member"))

    async def revoke() -> None:
        if how == "revoked":
            async with api.delete("/identity/v3/auth/tokens",
                                  headers={"X-Auth-Token": alice, "X-Subject-Token": alice}) as r:
                assert r.status == 204

    _ended_for_the_token(await _stream_until_it_ends(api, path, alice, revoke))


async def test_the_event_stream_checks_its_token_before_each_event_it_sends(
        settings: Settings, tmp_path: Path, aiohttp_client: MakeClient) -> None:
    # A recheck interval far beyond the deadline: only the check at the event can end the stream.
    app = make_app(_settings(settings, tmp_path, token_recheck_seconds=3600))
    api = await aiohttp_client(app)
    alice = await _token(api, "alice", "wonderland")
    path = await _stack(api, alice)
    stack_id = uuid.UUID(path.rsplit("/", 1)[1])

    async def revoke_then_add_an_event() -> None:
        async with api.delete("/identity/v3/auth/tokens",
                              headers={"X-Auth-Token": alice, "X-Subject-Token": alice}) as r:
            assert r.status == 204
        async with app[RUNTIME].pool.acquire() as conn:
            await events.add(conn, stack_id=stack_id, resource_name="validate", physical_resource_id=None,
                             resource_type="OS::Heat::None", action="CHECK", status="COMPLETE",
                             reason="after the revocation")

    text = await _stream_until_it_ends(api, path, alice, revoke_then_add_an_event)
    _ended_for_the_token(text)
    assert "after the revocation" not in text
