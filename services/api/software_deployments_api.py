"""``/v1/{project}/software_deployments``: Heat's deployments of configs to servers, and a server's metadata.

A deployment is the caller's when its project made it or is its stack user
project (Heat's rule); an admin sees every one. ``GET .../metadata/{server_id}``
is the list a server's agent reads: the configs deployed to it, by config name
(``libs.software_views``).
"""

from __future__ import annotations

from aiohttp import web

from libs import deployment_outputs, software_requests, software_views
from libs.db import Conn, software_deployments
from libs.db.software_deployments import DeploymentRow
from libs.template.errors import NotFound
from services.api.context import context
from services.api.http import json_response, json_value
from services.api.keys import REGISTRY, RUNTIME
from services.api.software_configs_api import check_limit, config_of, query_last


def _visible_to(request: web.Request) -> str | None:
    ctx = context(request)
    return None if ctx.is_admin else ctx.project


async def _deployment(request: web.Request, conn: Conn) -> DeploymentRow:
    """The deployment of the URL, if the caller may see it; else Heat's 404."""
    deployment_id = software_requests.id_of(request.match_info["deployment_id"])
    row = None if deployment_id is None else await software_deployments.get(conn, deployment_id)
    project = _visible_to(request)
    if row is None or (project is not None and project not in (row.project, row.stack_user_project_id)):
        # Heat's message shows the placeholder, not the id, as for configs.
        raise NotFound("Deployment with id {} not found")
    return row


def _shown(row: DeploymentRow) -> web.Response:
    return json_response({"software_deployment": software_views.deployment_view(row)})


async def listed(request: web.Request) -> web.Response:
    server_id = query_last(request, "server_id") or None  # Heat: an empty one filters nothing
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await software_deployments.page(conn, _visible_to(request), server_id=server_id,
                                               with_stack_user=True)
    return json_response({"software_deployments": [software_views.deployment_view(r) for r in rows]})


async def metadata(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        shown = await software_views.server_deployments(conn, request.match_info["server_id"],
                                                        _visible_to(request))
    return json_response({"metadata": shown})


async def show(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        return _shown(await _deployment(request, conn))


async def create(request: web.Request) -> web.Response:
    body = software_requests.body_object(await json_value(request))
    ctx = context(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        # Heat's order: the limit, the body, the config (404), then the server id.
        await check_limit(request, conn, "deployments")
        new = software_requests.new_deployment(body)
        async with conn.transaction():
            config = await config_of(request, conn, new.config_id, lock=True)
            server_id = software_requests.require_server(new)
            row = await software_deployments.insert(
                conn, project=ctx.project, config_id=config.id, server_id=server_id,
                input_values=new.input_values, action=new.action, status=new.status,
                status_reason=new.status_reason, stack_user_project_id=new.stack_user_project_id)
    return _shown(row)


async def update(request: web.Request) -> web.Response:
    body = software_requests.body_object(await json_value(request))
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await _deployment(request, conn)
        changes = software_requests.changes(body)
        async with conn.transaction():
            if "config_id" in changes:
                config = await config_of(request, conn, software_requests.id_of(changes["config_id"]),
                                         lock=True)
                changes["config_id"] = config.id
            updated = await software_deployments.update(conn, row.id, **changes)
            if updated is not None and "output_values" in changes:
                # Its resource's attributes, and its stack's outputs, are read from it (as in Heat).
                await deployment_outputs.follow(conn, request.app[REGISTRY], updated)
    if updated is None:
        raise NotFound("Deployment with id {} not found")  # deleted meanwhile
    return _shown(updated)


async def delete(request: web.Request) -> web.Response:
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await _deployment(request, conn)
        await software_deployments.delete(conn, row.id)
    return web.Response(status=204)


def add_routes(app: web.Application, prefix: str) -> None:
    r = app.router
    base = f"{prefix}/software_deployments"
    r.add_get(base, listed)
    r.add_post(base, create)
    r.add_get(f"{base}/metadata/{{server_id}}", metadata)
    r.add_get(f"{base}/{{deployment_id}}", show)
    r.add_put(f"{base}/{{deployment_id}}", update)
    r.add_delete(f"{base}/{{deployment_id}}", delete)

