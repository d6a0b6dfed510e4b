"""The chaos API (Ember's own, under ``/chaos``) and the middleware that carries its faults out.

``GET/PUT /chaos/settings``: boot seconds, error share...; ``POST /chaos/faults``
``{"service": "compute", "status": 503, "delay": 0, "seconds": 30, "method": "POST",
"count": 3, "share": 0.5, "hold": 0}`` makes calls (or a share of them) fail or answer late for a
while (``delay``: before the call is carried out; ``hold``: after it, the answer held back until
the hold ends or ``DELETE /chaos/faults``); ``PUT /chaos/settings {"seed": 7}`` fixes which
boots fail from then on; ``DELETE /chaos/faults`` ends the faults; ``GET /chaos/faults`` lists
them, with ``under_way``: the calls they delay or hold that have not answered yet. Acts on
objects behind Ember's back: ``POST /chaos/servers/{id}/delete``, ``POST /chaos/servers/{id}/error``,
``POST /chaos/ports/{id}/detach``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from libs.simcloud import auth, errors, jsonweb
from libs.simcloud.state import STATE, Fault, ServiceName, SimSettings, SimState, boot_draws

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A service's acts on its objects, registered by the service: name -> (state, object id) -> found?
Act = Callable[[SimState, str], Awaitable[bool]]
ACTS = web.AppKey("simcloud_chaos_acts", dict[str, Act])


@web.middleware
async def apply_faults(request: web.Request, handler: Handler) -> web.StreamResponse:
    service = auth.service_of(request.path)
    if service is None:
        return await handler(request)
    state = request.app[STATE]
    faults = state.faults_for(service, request.method)
    if not faults:
        return await handler(request)
    for fault in faults:
        state.spend(fault)
    state.faulted_under_way += 1
    try:
        return await _faulted(request, handler, state, faults)
    finally:
        state.faulted_under_way -= 1


async def _faulted(request: web.Request, handler: Handler, state: SimState, faults: list[Fault]
                   ) -> web.StreamResponse:
    service = auth.service_of(request.path)
    assert service is not None
    delay = max(f.delay for f in faults)
    if delay > 0:
        # The point of this fault: the simulated cloud is slow to answer.
        await asyncio.sleep(delay)
    failing = [f for f in faults if f.status is not None]
    if failing:
        status = failing[0].status
        assert status is not None
        return errors.response(auth.style_for(service), status, f"Simulated failure ({status}) of {service}")
    released = state.released
    response = await handler(request)
    hold = max(f.hold for f in faults)
    if hold > 0:
        # The call took effect; its answer comes late (a caller may die before it has it), or
        # when the faults are cleared.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(released.wait(), hold)
    return response


def _settings_json(settings: SimSettings) -> dict[str, Any]:
    return dataclasses.asdict(settings)


async def get_settings(request: web.Request) -> web.Response:
    return jsonweb.reply(_settings_json(request.app[STATE].settings))


async def put_settings(request: web.Request) -> web.Response:
    state = request.app[STATE]
    changes = await jsonweb.body(request)
    known = {f.name for f in dataclasses.fields(SimSettings)}
    unknown = set(changes) - known
    if unknown:
        raise errors.bad_request(f"unknown settings: {sorted(unknown)}")
    try:
        state.settings = dataclasses.replace(state.settings, **{k: float(v) for k, v in changes.items()})
    except (TypeError, ValueError) as exc:
        raise errors.bad_request(str(exc)) from None
    if "seed" in changes:
        state.boot_rng = boot_draws(state.settings)
    return jsonweb.reply(_settings_json(state.settings))


async def add_fault(request: web.Request) -> web.Response:
    state = request.app[STATE]
    spec = await jsonweb.body(request)
    try:
        service = ServiceName(spec["service"]) if spec.get("service") else None
        status = int(spec["status"]) if spec.get("status") is not None else None
        fault = Fault(id=state.new_id(), service=service, status=status, delay=float(spec.get("delay", 0)),
                      until=state.clock() + float(spec.get("seconds", 3600)),
                      method=spec.get("method"), remaining=int(spec["count"]) if spec.get("count") else None,
                      share=float(spec.get("share", 1.0)), hold=float(spec.get("hold", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise errors.bad_request(f"bad fault: {exc}") from None
    state.faults.append(fault)
    return jsonweb.reply(fault.as_json(), status=201)


async def list_faults(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.faults_for(None, "")  # drops the ones over
    return jsonweb.reply({"faults": [f.as_json() for f in state.faults],
                          "under_way": state.faulted_under_way})


async def clear_faults(request: web.Request) -> web.Response:
    state = request.app[STATE]
    state.faults.clear()
    state.released.set()
    state.released = asyncio.Event()
    return jsonweb.no_content()


async def detach_port(state: SimState, port_id: str) -> bool:
    async with state.pool.acquire() as conn:
        done = await conn.fetchval(
            "UPDATE simcloud.ports SET device_id = '', device_owner = '', status = 'DOWN', updated_at = now()"
            " WHERE id = $1 RETURNING id", port_id)
    return done is not None


async def act(request: web.Request) -> web.Response:
    """``POST /chaos/{kind}/{id}/{action}``: an act a service registered, e.g. servers/delete."""
    acts = request.app[ACTS]
    name = f"{request.match_info['kind']}/{request.match_info['action']}"
    chosen = acts.get(name)
    if chosen is None:
        raise errors.not_found(f"no chaos act {name}; known: {sorted(acts)}")
    if not await chosen(request.app[STATE], request.match_info["id"]):
        raise errors.not_found(f"{request.match_info['kind']} {request.match_info['id']} not found")
    return jsonweb.no_content()


def make_app(state: SimState, acts: dict[str, Act]) -> web.Application:
    app = web.Application(middlewares=[errors.middleware(errors.ErrorStyle.KEYSTONE)])
    app[STATE] = state
    app[ACTS] = {"ports/detach": detach_port, **acts}
    app.router.add_get("/settings", get_settings)
    app.router.add_put("/settings", put_settings)
    app.router.add_get("/faults", list_faults)
    app.router.add_post("/faults", add_fault)
    app.router.add_delete("/faults", clear_faults)
    app.router.add_post("/{kind}/{id}/{action}", act)
    return app

