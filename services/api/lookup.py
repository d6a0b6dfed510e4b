"""Finding the stack a URL names, as Heat does: redirects from a name, checks on the canonical path.

``/stacks/{name or id}`` (and its sub-paths) answers 302 to
``/stacks/{name}/{id}``, method and query kept, so heatclient can resolve
names; a UUID finds a deleted stack too. On ``/stacks/{name}/{id}`` the name
must be the stack's, else 404. A stack of another project is never found.
"""

from __future__ import annotations

import uuid

from aiohttp import web

from libs.db import stacks
from libs.template.errors import EntityNotFound
from services.api.context import context
from services.api.keys import RUNTIME

# Sub-paths that Heat redirects from a bare name.
REDIRECTED = ("resources", "events", "template", "environment", "files", "actions", "outputs",
              "preview", "snapshots", "abandon", "export")


def base_url(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}/v1/{context(request).project}"


async def _identify(request: web.Request, name_or_id: str) -> stacks.StackRow | None:
    async with request.app[RUNTIME].pool.acquire() as conn:
        return await stacks.identify(conn, context(request).project, name_or_id)


async def redirect(request: web.Request) -> web.StreamResponse:
    name_or_id = request.match_info["stack_name"]
    row = await _identify(request, name_or_id)
    if row is None:
        raise EntityNotFound("Stack", name_or_id)
    tail = request.match_info.get("tail", "")
    location = f"{base_url(request)}/stacks/{row.name}/{row.id}" + (f"/{tail}" if tail else "")
    if request.query_string:
        location += f"?{request.query_string}"
    raise web.HTTPFound(location)


async def stack_of(request: web.Request) -> stacks.StackRow:
    """The stack of a canonical ``/stacks/{stack_name}/{stack_id}/...`` path, or Heat's 404."""
    name, stack_id = request.match_info["stack_name"], request.match_info["stack_id"]
    try:
        uuid.UUID(stack_id)
    except ValueError:
        raise EntityNotFound("Stack", name) from None
    row = await _identify(request, stack_id)
    if row is None or row.name != name:
        raise EntityNotFound("Stack", name)
    return row


def add_redirects(app: web.Application, prefix: str) -> None:
    """Register before the canonical routes: a literal sub-path wins over ``{stack_id}``."""
    for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
        app.router.add_route(method, f"{prefix}/stacks/{{stack_name}}", redirect)
    for sub in REDIRECTED:
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE"):
            app.router.add_route(method, f"{prefix}/stacks/{{stack_name}}/{{tail:{sub}(/.*)?}}", redirect)
