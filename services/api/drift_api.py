"""``/stacks/{name}/{id}/drift`` (Ember): what the observer saw of the stack's resources in the cloud."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from libs.db import drift
from services.api import lookup, views
from services.api.http import json_response
from services.api.keys import RUNTIME


def _shown(row: drift.DriftRow) -> dict[str, Any]:
    return {"id": row.id, "resource_name": row.resource_name, "kind": row.kind, "fields": row.fields,
            "detail": row.detail, "detected_at": views.isotime(row.detected_at),
            "resolved_at": views.isotime(row.resolved_at) if row.resolved_at is not None else None,
            "action_taken": row.action_taken}


async def listed(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await drift.for_stack(conn, stack.id)
    return json_response({"drift": [_shown(r) for r in rows]})


def add_routes(app: web.Application, one: str) -> None:
    app.router.add_get(f"{one}/drift", listed)
