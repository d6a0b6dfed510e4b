"""``/v1/{project}/software_configs``: Heat's software configs, listed, made, shown and deleted.

As in Heat, an admin sees every project's configs (and is held to no limit on
how many a project has), ``global_tenant=true`` is refused to everyone (its
policy denies everybody), and a config a deployment uses cannot be deleted.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from aiohttp import web

from libs import software_requests, software_views
from libs.db import Conn, software_configs, software_deployments
from libs.db.software_configs import ConfigRow
from libs.template.errors import InvalidRestrictedAction, MalformedRequest, NotFound, RequestLimitExceeded
from services.api import policy
from services.api.context import context
from services.api.http import json_response, json_value
from services.api.keys import RUNTIME, SETTINGS

# A limit past any table's size is no limit; PostgreSQL's LIMIT takes at most a bigint.
_ALL = 2**62


def not_found() -> NotFound:
    # Heat's message shows the placeholder, not the id: its NotFound drops the argument.
    return NotFound("Software config with id {} not found")


def query_last(request: web.Request, name: str) -> str | None:
    """A query parameter as Heat reads it (webob: a repeated key's last value wins)."""
    values = request.query.getall(name, [])
    return values[-1] if values else None


def heat_int(name: str, text: str) -> int:
    """Heat's ``param_utils.extract_int`` for a count that may be zero but not negative."""
    try:
        number = int(text)
    except ValueError:
        number = None
    if number is None or str(number) != text:
        raise MalformedRequest(f"Only integer is acceptable by '{name}'.")
    if number < 0:
        raise MalformedRequest(f"Value '{text}' is invalid for '{name}' which only accepts"
                               " non-negative integer.")
    return number


def heat_bool(name: str, text: str) -> bool:
    """Heat's ``param_utils.extract_bool``: ``true`` or ``false`` in any case, nothing else."""
    if text.lower() not in ("true", "false"):
        raise MalformedRequest(f'Unrecognized value "{text}" for "{name}", acceptable values are:'
                               " true, false.")
    return text.lower() == "true"


async def listed(request: web.Request) -> web.Response:
    everyone = query_last(request, "global_tenant")
    if everyone is not None and heat_bool("global_tenant", everyone):
        raise policy.Forbidden("software_configs:global_index")
    given = query_last(request, "limit")
    limit = min(heat_int("limit", given), _ALL) if given is not None else None
    # Heat pages from a marker it finds; one it does not (or that is no id) is no marker.
    marker = software_requests.id_of(query_last(request, "marker"))
    ctx = context(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await software_configs.page(conn, None if ctx.is_admin else ctx.project, limit=limit,
                                           marker=marker)
    shown = [software_views.config_view(r, detail=False, with_project=ctx.is_admin) for r in rows]
    return json_response({"software_configs": shown})


# What Heat's max_software_<kind>_per_tenant counts, per kind.
_COUNTED: dict[str, Callable[[Conn, str], Awaitable[int]]] = {
    "configs": software_configs.count, "deployments": software_deployments.count}


async def check_limit(request: web.Request, conn: Conn, kind: str) -> None:
    """Heat's limit of ``kind`` (configs, deployments) per project, which admins are not held to.

    Heat counts before it reads the body, so a project at its limit hears of the limit."""
    ctx = context(request)
    limit: int = getattr(request.app[SETTINGS].api, f"max_software_{kind}_per_tenant")
    if not ctx.is_admin and limit >= 0 and await _COUNTED[kind](conn, ctx.project) >= limit:
        raise RequestLimitExceeded(f"You have reached the maximum software {kind} per tenant, {limit}."
                                   f" Please delete some {kind}.")


async def create(request: web.Request) -> web.Response:
    body = software_requests.body_object(await json_value(request))
    async with request.app[RUNTIME].pool.acquire() as conn:
        await check_limit(request, conn, "configs")
        new = software_requests.new_config(body)
        row = await software_configs.insert(conn, project=context(request).project, name=new.name,
                                            group=new.group, config=new.config)
    return json_response({"software_config": software_views.config_view(row)})


async def config_of(request: web.Request, conn: Conn, config_id: uuid.UUID | None, *, lock: bool = False
                    ) -> ConfigRow:
    """The config the caller may see (an admin: any), or Heat's 404 (``lock``: software_configs.get's)."""
    ctx = context(request)
    row = None if config_id is None else await software_configs.get(
        conn, config_id, None if ctx.is_admin else ctx.project, lock=lock)
    if row is None:
        raise not_found()
    return row


async def show(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await config_of(request, conn, software_requests.id_of(request.match_info["config_id"]))
    return json_response({"software_config": software_views.config_view(row)})


async def delete(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await config_of(request, conn, software_requests.id_of(request.match_info["config_id"]))
        if not await software_configs.delete(conn, row.id):
            if await software_configs.get(conn, row.id) is None:
                raise not_found()  # another request deleted it meanwhile
            # Heat answers this with a 500 (its fault map lacks the type); the type and words are its.
            raise InvalidRestrictedAction(f"Software config with id {row.id} can not be deleted as it is"
                                          " referenced.")
    return web.Response(status=204)


def add_routes(app: web.Application, prefix: str) -> None:
    r = app.router
    r.add_get(f"{prefix}/software_configs", listed)
    r.add_post(f"{prefix}/software_configs", create)
    r.add_get(f"{prefix}/software_configs/{{config_id}}", show)
    r.add_delete(f"{prefix}/software_configs/{{config_id}}", delete)
