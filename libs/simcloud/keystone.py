"""Keystone v3, the part openstacksdk uses: password (and token) auth scoped to a project, the catalog.

Mounted at ``/identity``; ``auth_url`` is ``<base>/identity``.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Any

from aiohttp import web

from libs.simcloud import auth, catalog, jsonweb
from libs.simcloud.app import service_app
from libs.simcloud.errors import ApiError, ErrorStyle
from libs.simcloud.state import STATE, SimState

DOMAIN = {"id": "default", "name": "Default"}
UPDATED = "2025-09-01T00:00:00Z"


def _version(base: str) -> dict[str, object]:
    return {"id": "v3.14", "status": "stable", "updated": UPDATED,
            "links": [{"rel": "self", "href": f"{base}/identity/v3/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


async def versions(request: web.Request) -> web.Response:
    return jsonweb.reply({"versions": {"values": [_version(jsonweb.base_url(request))]}}, status=300)


async def version(request: web.Request) -> web.Response:
    return jsonweb.reply({"version": _version(jsonweb.base_url(request))})


def _unauthorized(message: str = "The request you have made requires authentication.") -> ApiError:
    return ApiError(401, message)


def _domain_ok(spec: dict[str, Any] | None) -> bool:
    if not spec:
        return True
    name = str(spec.get("name", "Default")).lower()
    return bool(spec.get("id", "default") == "default" and name == "default")


async def _password_user(state: SimState, method: dict[str, Any]) -> str:
    user = method.get("user") or {}
    if not _domain_ok(user.get("domain")):
        raise _unauthorized()
    async with state.pool.acquire() as conn:
        row = await conn.fetchrow("SELECT id, password FROM simcloud.users WHERE id = $1 OR name = $2",
                                  user.get("id"), user.get("name"))
    if row is None or not secrets.compare_digest(row["password"], str(user.get("password", ""))):
        raise _unauthorized()
    user_id: str = row["id"]
    return user_id


async def _scope(state: SimState, user_id: str, scope: dict[str, Any] | None) -> tuple[dict[str, Any],
                                                                                     list[str]]:
    """The project a token is for (its scope, else the user's default project) and the user's roles there."""
    async with state.pool.acquire() as conn:
        project_spec = (scope or {}).get("project")
        if project_spec:
            if not _domain_ok(project_spec.get("domain")):
                raise _unauthorized("Could not find project")
            project = await conn.fetchrow("SELECT id, name FROM simcloud.projects WHERE id = $1 OR name = $2",
                                          project_spec.get("id"), project_spec.get("name"))
        else:
            project = await conn.fetchrow(
                "SELECT p.id, p.name FROM simcloud.projects p JOIN simcloud.users u"
                " ON u.default_project_id = p.id WHERE u.id = $1", user_id)
        if project is None:
            raise _unauthorized("Could not find project")
        roles = [r["role"] for r in await conn.fetch(
            "SELECT role FROM simcloud.role_assignments WHERE user_id = $1 AND project_id = $2 ORDER BY role",
            user_id, project["id"])]
    if not roles:
        raise _unauthorized(f"User {user_id} has no access to project {project['id']}")
    return dict(project), roles


async def _token_body(state: SimState, base: str, found: auth.Auth, methods: list[str]) -> dict[str, Any]:
    async with state.pool.acquire() as conn:
        user = await conn.fetchrow("SELECT id, name FROM simcloud.users WHERE id = $1", found.user_id)
        project = await conn.fetchrow("SELECT id, name FROM simcloud.projects WHERE id = $1",
                                      found.project_id)
    if user is None or project is None:
        raise ApiError(404, "Could not find token")
    expires = datetime.datetime.fromtimestamp(found.expires, datetime.UTC)
    issued = expires - datetime.timedelta(seconds=auth.TOKEN_SECONDS)
    return {"token": {
        "methods": methods, "audit_ids": [found.audit_id],
        "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "issued_at": issued.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        "user": {"id": user["id"], "name": user["name"], "domain": DOMAIN, "password_expires_at": None},
        "project": {"id": project["id"], "name": project["name"], "domain": DOMAIN},
        "is_domain": False,
        "roles": [{"id": role, "name": role} for role in found.roles],
        "catalog": catalog.catalog(base, project["id"]),
    }}


async def issue_token(request: web.Request) -> web.Response:
    state = request.app[STATE]
    spec = (await jsonweb.body(request, "auth"))
    identity = spec.get("identity") or {}
    methods = list(identity.get("methods") or [])
    if "password" in methods:
        user_id = await _password_user(state, identity.get("password") or {})
    elif "token" in methods:
        given_token = str((identity.get("token") or {}).get("id", ""))
        given = auth.check(state.token_secret, given_token, state.clock())
        if given is None:
            raise _unauthorized()
        user_id = given.user_id
    else:
        raise ApiError(400, f"Unsupported auth methods: {methods}")
    project, roles = await _scope(state, user_id, spec.get("scope"))
    found = auth.Auth(user_id=user_id, project_id=project["id"], roles=tuple(roles),
                      expires=state.clock() + auth.TOKEN_SECONDS, audit_id=secrets.token_urlsafe(16))
    token = auth.issue(state.token_secret, found)
    body = await _token_body(state, jsonweb.base_url(request), found, methods)
    return jsonweb.reply(body, status=201, headers={"X-Subject-Token": token})


def _caller(request: web.Request) -> auth.Auth:
    state = request.app[STATE]
    found = auth.check(state.token_secret, request.headers.get("X-Auth-Token", ""), state.clock())
    if found is None:
        raise _unauthorized()
    return found


async def validate_token(request: web.Request) -> web.Response:
    _caller(request)
    state = request.app[STATE]
    subject = request.headers.get("X-Subject-Token", "")
    found = auth.check(state.token_secret, subject, state.clock())
    if found is None:
        raise ApiError(404, "Could not find token")
    body = await _token_body(state, jsonweb.base_url(request), found, ["password"])
    return jsonweb.reply(body, headers={"X-Subject-Token": subject})


async def revoke_token(request: web.Request) -> web.Response:
    _caller(request)
    return jsonweb.no_content()


def _project_json(row: Any, base: str) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "domain_id": row["domain_id"], "enabled": True,
            "description": "", "is_domain": False, "parent_id": row["domain_id"], "tags": [], "options": {},
            "links": {"self": f"{base}/identity/v3/projects/{row['id']}"}}


async def my_projects(request: web.Request) -> web.Response:
    caller = _caller(request)
    async with request.app[STATE].pool.acquire() as conn:
        rows = await conn.fetch(
            "SELECT DISTINCT p.* FROM simcloud.projects p JOIN simcloud.role_assignments r"
            " ON r.project_id = p.id WHERE r.user_id = $1 ORDER BY p.name", caller.user_id)
    base = jsonweb.base_url(request)
    return jsonweb.reply({"projects": [_project_json(r, base) for r in rows],
                          "links": {"self": f"{base}{request.path}", "next": None, "previous": None}})


async def projects(request: web.Request) -> web.Response:
    caller = _caller(request)
    async with request.app[STATE].pool.acquire() as conn:
        rows = await conn.fetch("SELECT * FROM simcloud.projects WHERE ($1::text IS NULL OR name = $1)"
                                " ORDER BY name", request.query.get("name"))
    if not caller.is_admin:
        rows = [r for r in rows if r["id"] == caller.project_id]
    base = jsonweb.base_url(request)
    return jsonweb.reply({"projects": [_project_json(r, base) for r in rows],
                          "links": {"self": f"{base}{request.path}", "next": None, "previous": None}})


async def project(request: web.Request) -> web.Response:
    caller = _caller(request)
    project_id = request.match_info["project_id"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM simcloud.projects WHERE id = $1", project_id)
    if row is None or (not caller.is_admin and row["id"] != caller.project_id):
        raise ApiError(404, f"Could not find project: {project_id}.")
    return jsonweb.reply({"project": _project_json(row, jsonweb.base_url(request))})


async def auth_catalog(request: web.Request) -> web.Response:
    caller = _caller(request)
    return jsonweb.reply({"catalog": catalog.catalog(jsonweb.base_url(request), caller.project_id)})


def make_app(state: SimState) -> web.Application:
    app = service_app(state, ErrorStyle.KEYSTONE)
    r = app.router
    r.add_get("/", versions)
    r.add_get("/v3", version)
    r.add_get("/v3/", version)
    r.add_post("/v3/auth/tokens", issue_token)
    r.add_get("/v3/auth/tokens", validate_token)
    r.add_delete("/v3/auth/tokens", revoke_token)
    r.add_get("/v3/auth/projects", my_projects)
    r.add_get("/v3/auth/catalog", auth_catalog)
    r.add_get("/v3/projects", projects)
    r.add_get("/v3/projects/{project_id}", project)
    return app
