"""The aiohttp application of the api service."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from libs.config import Settings
from libs.runtime import open_runtime
from services.api import health
from services.api.faults import fault_middleware
from services.api.keys import RUNTIME, SETTINGS
from services.api.tracing import tracing_middleware


async def versions(request: web.Request) -> web.Response:
    # Heat answers the root with 300 Multiple Choices and the one version it has.
    href = f"{request.scheme}://{request.host}/v1/"
    body = {"versions": [{"id": "v1.0", "status": "CURRENT", "links": [{"rel": "self", "href": href}]}]}
    return web.Response(status=300, body=orjson.dumps(body), content_type="application/json")


async def _runtime_ctx(app: web.Application) -> AsyncIterator[None]:
    async with open_runtime(app[SETTINGS], "api") as rt:
        app[RUNTIME] = rt
        yield


def make_app(settings: Settings) -> web.Application:
    # Tracing outside faults, so the span records the status the client gets.
    app = web.Application(middlewares=[tracing_middleware, fault_middleware])
    app[SETTINGS] = settings
    app.cleanup_ctx.append(_runtime_ctx)
    app.router.add_get("/", versions)
    app.router.add_get("/ember/v1/health", health.health)
    return app
