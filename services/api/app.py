"""The aiohttp application of the api service."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from libs import evaluation_pool
from libs.cloud import sdk
from libs.cloud.validation import CloudLookups
from libs.config import Settings
from libs.resources.registry import default_registry
from libs.runtime import open_runtime
from libs.template import budgets
from services.api import (
    catalog,
    event_stream,
    health,
    hook_clearing,
    identity,
    openapi,
    scale_requests,
    stacks,
)
from services.api.auth import auth_middleware
from services.api.faults import fault_middleware
from services.api.keys import CLOUD_LOOKUPS, EVALUATION, REGISTRY, RUNTIME, SETTINGS
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


async def _evaluation_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    async with evaluation_pool.opened_for(settings) as pool:
        app[EVALUATION] = pool
        yield


async def _cloud_ctx(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    async with sdk.opened(settings.cloud) as caller:
        app[CLOUD_LOOKUPS] = CloudLookups(caller, settings.cloud)
        yield


def make_app(settings: Settings) -> web.Application:
    # Tracing outside faults, so the span records the status the client gets;
    # auth inside faults, so its refusals have Heat's body too.
    app = web.Application(middlewares=[tracing_middleware, fault_middleware, auth_middleware],
                          client_max_size=settings.api.max_json_body_size)
    app[SETTINGS] = settings
    budgets.configure(settings.budgets)
    app[REGISTRY] = default_registry()
    app.cleanup_ctx.append(_evaluation_ctx)
    app.cleanup_ctx.append(_cloud_ctx)
    app.cleanup_ctx.append(_runtime_ctx)
    app.cleanup_ctx.append(event_stream.feed_ctx)
    app.cleanup_ctx.append(scale_requests.responder_ctx)
    app.cleanup_ctx.append(hook_clearing.responder_ctx)
    app.router.add_get("/", versions)
    app.router.add_get("/ember/v1/health", health.health)
    app.router.add_get("/openapi.json", openapi.serve)
    identity.setup(app)
    catalog.add_routes(app)
    stacks.add_routes(app)
    return app
