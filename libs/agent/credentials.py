"""The agent's token: given (``--token``, an operator's), or got as the server's stack user and got
again when the API answers 401 (tokens expire), as os-collect-config's heat collector does.

Where the stack user comes from: ``--user-id``/``--password``, or the ``heat`` section of the
server's ``os-collect-config`` (:func:`from_collect_config`), which Ember writes into the
server's metadata and user data. No token is asked for until the API asks for one: in noauth
mode the agent never authenticates.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import aiohttp
import orjson

from libs.telemetry import logs

if TYPE_CHECKING:
    from libs.agent.settings import AgentSettings

log = logs.logger("agent")
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)


def from_collect_config(raw: bytes) -> dict[str, str]:
    """The options a server's metadata (or its ``os-collect-config`` section) gives: ``user_id``,
    ``password``, ``auth_url`` and ``project``, those it has. Raises ValueError if it is not JSON."""
    data: Any = orjson.loads(raw)
    if isinstance(data, Mapping) and isinstance(data.get("os-collect-config"), Mapping):
        data = data["os-collect-config"]
    heat = data.get("heat") if isinstance(data, Mapping) else None
    if not isinstance(heat, Mapping):
        return {}
    names = {"user_id": "user_id", "password": "password", "auth_url": "auth_url", "project_id": "project"}
    return {option: str(heat[key]) for key, option in names.items()
            if isinstance(heat.get(key), str) and heat[key]}


def password_auth(user_id: str, password: str, project_id: str) -> dict[str, Any]:
    """Keystone v3's password auth by user id, scoped to a project by id (as keystoneauth sends it)."""
    return {"auth": {"identity": {"methods": ["password"],
                                  "password": {"user": {"id": user_id, "password": password}}},
                     "scope": {"project": {"id": project_id}}}}


class Tokens:
    """The token the agent's requests carry, renewed on a 401 when it has a stack user."""

    def __init__(self, session: aiohttp.ClientSession, settings: AgentSettings) -> None:
        self._session = session
        self._settings = settings
        self.token: str | None = settings.token

    @property
    def renewable(self) -> bool:
        return self._settings.user_id is not None and self._settings.password is not None

    def headers(self) -> dict[str, str]:
        return {"X-Auth-Token": self.token} if self.token else {}

    async def renew(self) -> str | None:
        """Get a new token; None when it was got, else why not."""
        settings = self._settings
        if settings.user_id is None or settings.password is None:
            return "no stack user to get a token as (--user-id, --password)"
        url = f"{settings.auth_url}/auth/tokens"
        body = password_auth(settings.user_id, settings.password, settings.project)
        try:
            async with self._session.post(url, json=body, timeout=REQUEST_TIMEOUT) as response:
                if response.status != 201:
                    return f"token from {url}: {response.status}"
                self.token = response.headers.get("X-Subject-Token")
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            return f"token from {url}: {type(exc).__name__}: {exc}"
        log.info("got a token", extra={"auth_url": url, "user_id": settings.user_id})
        return None
