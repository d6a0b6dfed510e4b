"""``/stacks/{name}/{id}/snapshots``: take, list, show, delete and restore snapshots, as Heat."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from libs import stack_snapshots
from libs.db import snapshots
from libs.engine.status import Action, Status
from libs.template import errors
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api import lookup, views
from services.api.http import json_body, json_response, path_uuid
from services.api.keys import RUNTIME, SETTINGS


def _shown(row: snapshots.SnapshotRow) -> dict[str, Any]:
    return {"id": str(row.id), "name": row.name, "action": Action.SNAPSHOT, "status": row.status,
            "status_reason": row.status_reason,
            "data": row.data, "creation_time": views.isotime(row.created_at)}


async def _snapshot(request: web.Request) -> tuple[Any, snapshots.SnapshotRow]:
    stack = await lookup.stack_of(request)
    snapshot_id = path_uuid(request, "snapshot_id", "Snapshot")
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await snapshots.get(conn, stack.id, snapshot_id)
    if row is None:
        raise EntityNotFound("Snapshot", str(snapshot_id))
    return stack, row


async def take(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    body = await json_body(request)
    name = body.get("name")
    if name is not None and not isinstance(name, str):
        raise MalformedRequest("name: expected a string")
    row = await stack_snapshots.take(request.app[RUNTIME].pool, stack, name)
    return json_response(_shown(row))


async def listed(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await snapshots.for_stack(conn, stack.id)
    return json_response({"snapshots": [_shown(r) for r in rows]})


async def show(request: web.Request) -> web.Response:
    _, row = await _snapshot(request)
    return json_response({"snapshot": _shown(row)})


async def delete(request: web.Request) -> web.Response:
    _, row = await _snapshot(request)
    if row.status == Status.IN_PROGRESS:
        raise MalformedRequest("Deleting in-progress snapshot")
    async with request.app[RUNTIME].pool.acquire() as conn:
        await snapshots.delete(conn, row.id)
    return web.Response(status=204)


async def restore(request: web.Request) -> web.Response:
    stack, row = await _snapshot(request)
    rt = request.app[RUNTIME]
    await stack_snapshots.restore(rt.pool, rt.bus, stack, row)
    return web.Response(status=202)


async def abandon(request: web.Request) -> web.Response:
    if not request.app[SETTINGS].api.enable_stack_abandon:
        raise errors.NotSupported("Stack Abandon")
    stack = await lookup.stack_of(request)
    rt = request.app[RUNTIME]
    return json_response(await stack_snapshots.abandon(rt.pool, rt.bus, stack))


async def export(request: web.Request) -> web.Response:
    if not request.app[SETTINGS].api.enable_stack_abandon:
        raise errors.NotSupported("Stack Export")
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        return json_response(await stack_snapshots.stack_data(conn, stack))


def add_routes(app: web.Application, one: str) -> None:
    r = app.router
    r.add_post(f"{one}/snapshots", take)
    r.add_get(f"{one}/snapshots", listed)
    r.add_get(f"{one}/snapshots/{{snapshot_id}}", show)
    r.add_delete(f"{one}/snapshots/{{snapshot_id}}", delete)
    r.add_post(f"{one}/snapshots/{{snapshot_id}}/restore", restore)
    r.add_delete(f"{one}/abandon", abandon)
    r.add_get(f"{one}/export", export)
