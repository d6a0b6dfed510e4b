"""Who is asking, for which project: what every ``/v1/{project_id}`` handler is given.

The auth middleware builds one :class:`RequestContext` per request (noauth:
from the path; keystone: from the token) and handlers read it with
:func:`context`. Heat's rules follow from it: a path naming another project
than the caller's is 403, a stack of another project is 404 (it is never
found), and a ``reader`` may look but not change.
"""

from __future__ import annotations

import dataclasses
from typing import Protocol

from aiohttp import web


@dataclasses.dataclass(frozen=True)
class StackUserScope:
    """What a stack user's token is bound to: one resource of one stack (and its server, if one)."""

    stack_id: str
    resource_name: str
    physical_id: str | None


@dataclasses.dataclass(frozen=True)
class RequestContext:
    project: str
    user: str | None = None
    user_name: str | None = None
    roles: frozenset[str] = frozenset({"admin"})
    token: str | None = None
    # A stack user's (Heat's ``heat_stack_user``): it may reach its own resource alone.
    stack_user: StackUserScope | None = None

    @property
    def is_admin(self) -> bool:
        return "admin" in self.roles


class Authenticator(Protocol):
    """Keystone mode: turns a token into who holds it (None: unknown or expired)."""

    async def verify(self, token: str) -> RequestContext | None: ...

    async def signed(self, project: str, stack_id: str, resource_name: str, signature: str) -> str | None:
        """The stack user whose secret signs a signal URL of that resource (None: no such one)."""


_KEY = web.RequestKey("ember.context", RequestContext)


def context(request: web.Request) -> RequestContext:
    try:
        return request[_KEY]
    except KeyError:
        raise RuntimeError("no request context: the route is outside /v1/{project_id}") from None


def set_context(request: web.Request, ctx: RequestContext) -> None:
    request[_KEY] = ctx
