"""Tokens and their check: Keystone issues them, every other service's request must carry one.

A token is signed, not stored: ``<payload>.<hmac>``, the payload naming the user,
the project and the expiry; the key lives in ``simcloud.meta`` so tokens outlive
a restart of the simulator.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable

from aiohttp import web

from libs.db import Conn
from libs.simcloud import errors
from libs.simcloud.state import STATE, ServiceName, new_secret

TOKEN_SECONDS = 24 * 3600


@dataclasses.dataclass(frozen=True)
class Auth:
    """Who a token speaks for."""

    user_id: str
    project_id: str
    roles: tuple[str, ...]
    expires: float
    audit_id: str

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


AUTH = web.RequestKey("simcloud_auth", Auth)  # request[AUTH]: the caller's Auth


def auth_of(request: web.Request) -> Auth:
    found = request.get(AUTH)
    assert isinstance(found, Auth), "the token middleware runs before every service handler"
    return found


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def issue(secret: bytes, auth: Auth) -> str:
    payload = _b64(json.dumps([auth.user_id, auth.project_id, list(auth.roles), auth.expires,
                               auth.audit_id]).encode())
    mac = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:18])
    return f"{payload}.{mac}"


def check(secret: bytes, token: str, now: float) -> Auth | None:
    """The token's Auth when it is ours, untouched and not expired; else None."""
    payload, _, mac = token.partition(".")
    expected = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest()[:18])
    if not mac or not hmac.compare_digest(mac, expected):
        return None
    try:
        user_id, project_id, roles, expires, audit_id = json.loads(_unb64(payload))
    except (ValueError, TypeError):
        return None
    if expires <= now:
        return None
    return Auth(user_id, project_id, tuple(roles), float(expires), audit_id)


async def load_secret(conn: Conn) -> bytes:
    """The signing key, made on first start."""
    await conn.execute("INSERT INTO simcloud.meta (key, value) VALUES ('token_secret', $1) "
                       "ON CONFLICT DO NOTHING", new_secret())
    value = await conn.fetchval("SELECT value FROM simcloud.meta WHERE key = 'token_secret'")
    return bytes.fromhex(value)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Paths answered without a token: discovery documents, Keystone's token issue, the chaos API.
_STYLES = {ServiceName.COMPUTE: errors.ErrorStyle.NOVA, ServiceName.VOLUME: errors.ErrorStyle.NOVA,
           ServiceName.NETWORK: errors.ErrorStyle.NEUTRON, ServiceName.IMAGE: errors.ErrorStyle.GLANCE,
           ServiceName.IDENTITY: errors.ErrorStyle.KEYSTONE}


def style_for(service: ServiceName | None) -> errors.ErrorStyle:
    return _STYLES.get(service, errors.ErrorStyle.KEYSTONE) if service else errors.ErrorStyle.KEYSTONE


def service_of(path: str) -> ServiceName | None:
    first = path.strip("/").split("/", 1)[0]
    try:
        return ServiceName(first)
    except ValueError:
        return None


def _is_discovery(path: str) -> bool:
    # "/compute", "/compute/v2.1/", "/image/v2", "/volume/v3/": two segments at most.
    parts = [p for p in path.split("/") if p]
    return len(parts) <= 2


@web.middleware
async def require_token(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The main app's check: a valid X-Auth-Token on every service call but discovery and identity."""
    service = service_of(request.path)
    if service is None or service is ServiceName.IDENTITY or (
            request.method == "GET" and _is_discovery(request.path)):
        return await handler(request)
    state = request.app[STATE]
    found = check(state.token_secret, request.headers.get("X-Auth-Token", ""), state.clock())
    if found is None:
        return errors.response(style_for(service), 401, "The request you have made requires authentication.")
    request[AUTH] = found
    return await handler(request)
