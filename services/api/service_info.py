"""``/build_info`` and ``/services``: what is running, as Heat reports its engines.

Every Ember process (api, planner, worker, observer, notifier) keeps a
heartbeat row, and ``GET /services`` shows each one the way Heat shows a
``heat-engine``: ``openstack orchestration service list`` prints Hostname,
Binary, Engine ID, Host, Topic, Updated At and Status from it.
"""

from __future__ import annotations

import datetime
import importlib.metadata
from typing import Any

from aiohttp import web

from libs.db import services
from services.api.http import json_response
from services.api.keys import RUNTIME

# Heat's serializer writes service times as naive UTC with microseconds.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%f"


def revision() -> str:
    try:
        return importlib.metadata.version("ember")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


async def build_info(_req: web.Request) -> web.Response:
    # One package holds the api and the engine services, so both run the same revision.
    current = revision()
    return json_response({"api": {"revision": current}, "engine": {"revision": current}})


def _time(at: datetime.datetime | None) -> str | None:
    return None if at is None else at.astimezone(datetime.UTC).strftime(TIME_FORMAT)


def service_view(row: services.ServiceRow, now: datetime.datetime) -> dict[str, Any]:
    return {
        "id": str(row.id),
        # Heat's engine has an id apart from its row's; an Ember process is its row.
        "engine_id": str(row.id),
        "host": row.host,
        "hostname": row.hostname,
        "binary": f"ember-{row.service}",
        "topic": row.topic,
        "report_interval": int(row.report_interval),
        "created_at": _time(row.created_at),
        "updated_at": _time(row.updated_at),
        "deleted_at": _time(row.deleted_at),
        "status": "up" if row.is_up(now) else "down",
    }


async def service_list(req: web.Request) -> web.Response:
    # For admins only: the route's rule (service:index) says so, and the auth middleware enforces it.
    async with req.app[RUNTIME].pool.acquire() as conn:
        rows = await services.list_all(conn)
    now = datetime.datetime.now(datetime.UTC)
    return json_response({"services": [service_view(row, now) for row in rows]})
