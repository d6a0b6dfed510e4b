"""The simulated cloud as one aiohttp application: every service a sub-app under its prefix.

A service is a module with ``make_app(state: SimState) -> web.Application``
(built with :func:`service_app`), and optionally ``CHAOS_ACTS`` (acts the chaos
API offers on its objects, e.g. ``{"servers/delete": ...}``). Modules not
written yet are skipped, so a partial simulator still serves.
"""

from __future__ import annotations

import importlib
import uuid
from collections.abc import Awaitable, Callable
from types import ModuleType

from aiohttp import web

from libs.simcloud import auth, chaos, errors
from libs.simcloud.state import STATE, ServiceName, SimState

SERVICE_MODULES = {
    ServiceName.IDENTITY: "libs.simcloud.keystone",
    ServiceName.COMPUTE: "libs.simcloud.nova",
    ServiceName.IMAGE: "libs.simcloud.glance",
    ServiceName.NETWORK: "libs.simcloud.neutron",
    ServiceName.VOLUME: "libs.simcloud.cinder",
}


# Whether a service's answers also carry ``x-compute-request-id`` (Nova's and Cinder's do).
COMPUTE_REQUEST_ID = web.AppKey("compute_request_id", bool)


@web.middleware
async def request_id(request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
    """Each answer names its request as OpenStack's services do (``req-<uuid>``); Nova and Cinder
    also under their older header, which novaclient and cinderclient print in their errors."""
    response = await handler(request)
    if response.prepared:  # streamed: its headers are sent
        return response
    made = f"req-{uuid.uuid4()}"
    response.headers.setdefault("x-openstack-request-id", made)
    if request.app.get(COMPUTE_REQUEST_ID):
        response.headers.setdefault("x-compute-request-id", made)
    return response


def service_app(state: SimState, style: errors.ErrorStyle) -> web.Application:
    """A service's sub-app: the state at hand, its errors answered in its own shape."""
    app = web.Application(middlewares=[request_id, errors.middleware(style)],
                          client_max_size=64 * 1024 * 1024)
    app[COMPUTE_REQUEST_ID] = style is errors.ErrorStyle.NOVA  # Cinder's style too
    app[STATE] = state
    return app


def load_service(module_name: str) -> ModuleType | None:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise


async def _to_slash(request: web.Request) -> web.Response:
    # A sub-app's root is "<prefix>/"; keystoneauth asks for "<prefix>" too.
    raise web.HTTPMovedPermanently(f"{request.scheme}://{request.host}{request.path}/")


async def _root(request: web.Request) -> web.Response:
    return web.json_response({"simcloud": "a simulated OpenStack for Ember",
                              "services": [s.value for s in ServiceName]})


def make_app(state: SimState) -> web.Application:
    app = web.Application(middlewares=[chaos.apply_faults, auth.require_token],
                          client_max_size=64 * 1024 * 1024)
    app[STATE] = state
    app.router.add_get("/", _root)
    acts: dict[str, chaos.Act] = {}
    for service, module_name in SERVICE_MODULES.items():
        module = load_service(module_name)
        if module is None:
            continue
        app.router.add_get(f"/{service.value}", _to_slash)
        app.add_subapp(f"/{service.value}", module.make_app(state))
        acts.update(getattr(module, "CHAOS_ACTS", {}))
    app.add_subapp("/chaos", chaos.make_app(state, acts))
    return app
