"""Keystone mode: a minimal Identity v3 endpoint of Ember's own, and the token check of every request.

``/identity/v3`` issues tokens for the users and projects of
``EMBER_AUTH_CONFIG`` (password, or an existing token, scoped to a project),
and for stack users (a password by user id: the credential Ember gave a
server's or a deployment's agent, see libs.resources.stack_user),
with a service catalog whose ``orchestration`` entry is this api, so
keystoneauth, ``openstack --os-auth-url .../identity/v3`` and heatclient work
with no other service. Tokens live in PostgreSQL (hashed), so any api process
checks what another issued. In noauth mode none of this is served.
"""

from __future__ import annotations

import dataclasses
import datetime
import hmac
import secrets
import uuid
from typing import Any

from aiohttp import web

from libs.db import stack_users, tokens
from libs.resources import stack_user
from services.api import identity_request, stack_user_access
from services.api.context import RequestContext, StackUserScope
from services.api.http import json_response
from services.api.identity_config import AuthConfig, Project, User, load, stable_id
from services.api.identity_request import DEFAULT_DOMAIN_ID, DEFAULT_DOMAIN_NAME, AuthRequest, MalformedAuth
from services.api.keys import AUTHENTICATOR, RUNTIME, SETTINGS

V3 = "/identity/v3"
DOMAIN = {"id": DEFAULT_DOMAIN_ID, "name": DEFAULT_DOMAIN_NAME}
AUTH_CONFIG = web.AppKey("auth_config", AuthConfig)


def _error(status: int, title: str, message: str) -> web.Response:
    return json_response({"error": {"code": status, "title": title, "message": message}}, status=status)


def _unauthorized() -> web.Response:
    return _error(401, "Unauthorized", "The request you have made requires authentication.")


def _iso(at: datetime.datetime) -> str:
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


_Live = tuple[tokens.TokenRow, stack_users.StackUserRow | None]


async def _live_with_users(app: web.Application, *tokens_given: str) -> list[_Live | None]:
    """Each token's row if it is live and its user still holds a role on its project, with the
    stack user it was issued to (None: a user of the config).

    Roles are the config's, not those stored at issue: a user removed from a
    project (or from the file) loses access at the api's restart, not at the
    token's expiry, as Keystone recomputes roles on validation. A stack user's
    token lives only while its resource does.
    """
    config = app[AUTH_CONFIG]
    found: list[_Live | None] = []
    # The pool exists only once the app has started (the runtime opens in a cleanup_ctx).
    async with app[RUNTIME].pool.acquire() as conn:
        for token in tokens_given:
            row = await tokens.live(conn, token)
            if row is not None and row.stack_user_id is not None:
                holder = await stack_users.live(conn, row.stack_user_id)
                found.append(None if holder is None else (
                    dataclasses.replace(row, roles=[stack_user_access.ROLE]), holder))
                continue
            user = None if row is None else config.user(id=row.user_id)
            if row is None or user is None or row.project_id not in user.roles:
                found.append(None)
            else:
                found.append((dataclasses.replace(row, roles=list(user.roles[row.project_id])), None))
    return found


async def _live(app: web.Application, *tokens_given: str) -> list[tokens.TokenRow | None]:
    return [None if live is None else live[0] for live in await _live_with_users(app, *tokens_given)]


class TokenAuthenticator:
    """The :class:`~services.api.context.Authenticator` of keystone mode."""

    def __init__(self, app: web.Application) -> None:
        self._app = app

    async def verify(self, token: str) -> RequestContext | None:
        [live] = await _live_with_users(self._app, token)
        if live is None:
            return None
        row, holder = live
        scope = None if holder is None else StackUserScope(
            stack_id=str(holder.stack_id), resource_name=holder.resource_name, physical_id=holder.physical_id)
        return RequestContext(project=row.project_id, user=row.user_id, user_name=row.user_name,
                              roles=frozenset(row.roles), token=token, stack_user=scope)

    async def signed(self, project: str, stack_id: str, resource_name: str, signature: str) -> str | None:
        """The stack user whose secret ``signature`` is, if it is that resource's in ``project`` (a signed
        signal URL)."""
        try:
            stack = uuid.UUID(stack_id)
        except ValueError:
            return None
        async with self._app[RUNTIME].pool.acquire() as conn:
            found = await stack_users.of_resource(conn, stack, resource_name)
        return next((u.id for u in found if u.project_id == project
                     and stack_user.matches(signature, u.secret_hash)), None)


def _base(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}"


def _version(request: web.Request) -> dict[str, Any]:
    return {"id": "v3.14", "status": "stable", "updated": "2020-04-07T00:00:00Z",
            "links": [{"rel": "self", "href": f"{_base(request)}{V3}/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.identity-v3+json"}]}


async def versions(request: web.Request) -> web.Response:
    return json_response({"versions": {"values": [_version(request)]}}, status=300)


async def version(request: web.Request) -> web.Response:
    return json_response({"version": _version(request)})


def _catalog(request: web.Request, project_id: str) -> list[dict[str, Any]]:
    def service(kind: str, name: str, url: str) -> dict[str, Any]:
        return {"id": stable_id("service", kind), "type": kind, "name": name, "endpoints": [
            {"id": stable_id("endpoint", f"{kind}:{interface}"), "interface": interface,
             "region": "RegionOne", "region_id": "RegionOne", "url": url}
            for interface in ("public", "internal", "admin")]}
    base = _base(request)
    return [service("orchestration", "heat", f"{base}/v1/{project_id}"),
            service("identity", "keystone", f"{base}{V3}")]


def _body(request: web.Request, row: tokens.TokenRow, methods: list[str]) -> dict[str, Any]:
    return {"token": {
        "methods": methods, "audit_ids": [row.audit_id], "is_domain": False,
        "user": {"id": row.user_id, "name": row.user_name, "domain": DOMAIN, "password_expires_at": None},
        "project": {"id": row.project_id, "name": row.project_name, "domain": DOMAIN},
        "roles": [{"id": stable_id("role", r), "name": r} for r in row.roles],
        "catalog": _catalog(request, row.project_id),
        "issued_at": _iso(row.issued_at), "expires_at": _iso(row.expires_at)}}


def _project(config: AuthConfig, user: User, asked: AuthRequest) -> Project | None:
    if asked.project is None:
        # No scope asked: the user's first project, as a Keystone default project would be.
        project = config.projects.get(next(iter(user.roles), ""))
    else:
        project = config.project(id=asked.project.id, name=asked.project.name)
    # A project the user holds no role on is refused as Keystone does: 401, not 403.
    if project is None or project.id not in user.roles:
        return None
    return project


async def _user(request: web.Request, asked: AuthRequest) -> tuple[User | None, datetime.datetime | None]:
    """Who authenticates, and the latest expiry the new token may have (None: the full ttl)."""
    config = request.app[AUTH_CONFIG]
    if asked.foreign:
        return None, None
    if asked.user is not None:
        user = config.user(id=asked.user.id, name=asked.user.name)
        # Compared in constant time, so the answer's timing does not spell the password.
        if user is None or asked.password is None or not hmac.compare_digest(
                user.password.encode(), asked.password.encode()):
            return None, None
        return user, None
    assert asked.token is not None  # parse() refuses a request with neither
    [row] = await _live(request.app, asked.token)
    if row is None:
        return None, None
    # A token traded for another (a rescope) passes on its expiry, so a stolen
    # token cannot be kept alive forever by trading it in.
    return config.user(id=row.user_id), row.expires_at


async def _issue_to_stack_user(request: web.Request, asked: AuthRequest) -> web.Response:
    """A token for a stack user (os-collect-config's heat collector, heat-config-notify): password
    auth by user id, in its stack's project alone, bound to its resource."""
    config = request.app[AUTH_CONFIG]
    assert asked.user is not None and asked.user.id is not None
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = await stack_users.live(conn, asked.user.id)
    if found is None or asked.foreign or asked.password is None or not stack_user.matches(
            asked.password, found.secret_hash):
        return _unauthorized()
    project = config.projects.get(found.project_id)
    # Its stack's project alone (one the config no longer has is no one's); another is 401, as any user's.
    if project is None or (asked.project is not None
                           and config.project(id=asked.project.id, name=asked.project.name) != project):
        return _unauthorized()
    token = secrets.token_urlsafe(32)
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await tokens.insert(conn, token, user_id=found.id,
                                  user_name=f"{found.stack_name}-{found.resource_name}"[:255],
                                  project_id=found.project_id,
                                  project_name=project.name,
                                  roles=[stack_user_access.ROLE], audit_id=secrets.token_urlsafe(16),
                                  ttl_seconds=request.app[SETTINGS].api.token_ttl_seconds,
                                  stack_user_id=found.id)
    return json_response(_body(request, row, list(asked.methods)), status=201,
                         headers={"X-Subject-Token": token})


async def issue(request: web.Request) -> web.Response:
    try:
        asked = identity_request.parse(await request.json())
    except ValueError as exc:  # not JSON, or MalformedAuth
        message = str(exc) if isinstance(exc, MalformedAuth) else "The request body is not JSON."
        return _error(400, "Bad Request", message)
    config = request.app[AUTH_CONFIG]
    if asked.user is not None and asked.user.id is not None and config.user(id=asked.user.id) is None:
        return await _issue_to_stack_user(request, asked)
    user, not_after = await _user(request, asked)
    if user is None:
        return _unauthorized()
    project = _project(request.app[AUTH_CONFIG], user, asked)
    if project is None:
        return _unauthorized()
    token = secrets.token_urlsafe(32)
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await tokens.insert(conn, token, user_id=user.id, user_name=user.name, project_id=project.id,
                                  project_name=project.name, roles=user.roles[project.id],
                                  audit_id=secrets.token_urlsafe(16),
                                  ttl_seconds=request.app[SETTINGS].api.token_ttl_seconds,
                                  not_after=not_after)
    return json_response(_body(request, row, list(asked.methods)), status=201,
                         headers={"X-Subject-Token": token})


# Keystone's default policies on another token: its own user may, and so may a system-scoped
# reader (check, validate), admin (revoke) or a service (validate). Ember has no system scope:
# an admin role stands for it, as an admin token already reaches every project.
TOKEN_POLICIES = {"HEAD": ("identity:check_token", frozenset({"admin"})),
                  "GET": ("identity:validate_token", frozenset({"admin", "service"})),
                  "DELETE": ("identity:revoke_token", frozenset({"admin"}))}


def refused(method: str, caller: tokens.TokenRow, subject: tokens.TokenRow) -> str | None:
    """The policy that refuses ``caller`` this method on ``subject``'s token, or None if allowed."""
    action, roles = TOKEN_POLICIES[method]
    if caller.user_id == subject.user_id or roles & set(caller.roles):
        return None
    return action


async def _subject(request: web.Request) -> tokens.TokenRow | web.Response:
    """The live token in X-Subject-Token, if the caller may act on it; else Keystone's refusal.

    As Keystone, the subject is looked up before the policy: an unknown one is 404 for anyone.
    """
    caller, subject = await _live(request.app, request.headers.get("X-Auth-Token", ""),
                                  request.headers.get("X-Subject-Token", ""))
    if caller is None:
        return _unauthorized()
    if subject is None:
        return _error(404, "Not Found", "Could not find token.")
    action = refused(request.method, caller, subject)
    if action is not None:
        return _error(403, "Forbidden", f"You are not authorized to perform the requested action: {action}.")
    return subject


async def check(request: web.Request) -> web.Response:
    subject = await _subject(request)
    if isinstance(subject, web.Response):
        return subject
    headers = {"X-Subject-Token": request.headers["X-Subject-Token"]}
    if request.method == "HEAD":
        return web.Response(status=200, headers=headers)
    # Every token starts from a password (a token is only traded for another), as Keystone reports.
    return json_response(_body(request, subject, ["password"]), headers=headers)


async def revoke(request: web.Request) -> web.Response:
    subject = await _subject(request)
    if isinstance(subject, web.Response):
        return subject
    async with request.app[RUNTIME].pool.acquire() as conn:
        if not await tokens.revoke(conn, request.headers.get("X-Subject-Token", "")):
            return _error(404, "Not Found", "Could not find token.")
    return web.Response(status=204)


async def projects(request: web.Request) -> web.Response:
    [caller] = await _live(request.app, request.headers.get("X-Auth-Token", ""))
    if caller is None:
        return _unauthorized()
    config = request.app[AUTH_CONFIG]
    user = config.user(id=caller.user_id)
    mine = [config.projects[p] for p in (user.roles if user else {}) if p in config.projects]
    return json_response({"projects": [{"id": p.id, "name": p.name, "domain_id": DEFAULT_DOMAIN_ID,
                                        "enabled": True, "is_domain": False, "parent_id": DEFAULT_DOMAIN_ID,
                                        "links": {"self": f"{_base(request)}{V3}/projects/{p.id}"}}
                                       for p in mine],
                          "links": {"self": f"{_base(request)}{V3}/auth/projects"}})


def setup(app: web.Application) -> None:
    settings = app[SETTINGS].api
    if settings.auth != "keystone":
        return
    assert settings.auth_config is not None  # the settings refuse keystone mode without it
    app[AUTH_CONFIG] = load(settings.auth_config)
    app[AUTHENTICATOR] = TokenAuthenticator(app)
    r = app.router
    r.add_get("/identity", versions)
    r.add_get(V3, version)
    r.add_get(f"{V3}/", version)
    r.add_post(f"{V3}/auth/tokens", issue)
    r.add_get(f"{V3}/auth/tokens", check, allow_head=False)
    r.add_route("HEAD", f"{V3}/auth/tokens", check)
    r.add_delete(f"{V3}/auth/tokens", revoke)
    r.add_get(f"{V3}/auth/projects", projects)
