"""``GET /ember/v1/health``: which services live, whether each queue flows, which server is down.

Live processes answer a control ping (core NATS, every instance replies). Each
queue is probed by publishing a ``Probe`` through JetStream to the durable
consumer that drains it: a reply proves the stream, the consumer and at least
one consuming process all work. ``dependencies`` says whether PostgreSQL and
NATS answer this api; while NATS is down no probe is sent (it could not
arrive), and the answer is 503 either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from typing import Any

import orjson
from aiohttp import web

from libs.db import services
from libs.dependencies import Dependency, down_in
from libs.errors import describe
from libs.messaging.bus import Inbox
from libs.messaging.payloads import PayloadError, Probe, ProbeReply, decode
from libs.messaging.subjects import SERVICES
from libs.runtime import Runtime
from services.api.keys import RUNTIME

PING_TIMEOUT = 0.5
PROBE_TIMEOUT = 3.0
DATABASE_TIMEOUT = 3.0


async def _live(rt: Runtime, service: str) -> list[dict[str, Any]]:
    if service == rt.service:
        return [_reply_dict(rt.probe_reply("ping"))]
    msgs = await rt.bus.gather_replies(rt.names.control_ping(service), b"ping", PING_TIMEOUT)
    return [_reply_dict(decode(m.data)) for m in msgs]


def _reply_dict(reply: object) -> dict[str, Any]:
    assert isinstance(reply, ProbeReply)
    return {"service_id": reply.service_id, "host": reply.host, "pid": reply.pid,
            "uptime_seconds": reply.uptime_seconds}


async def _probe_queue(rt: Runtime, subject: str) -> dict[str, Any]:
    probe_id = uuid.uuid4().hex
    started = time.monotonic()
    async with rt.bus.inbox() as inbox:
        await rt.bus.publish(subject, Probe(probe_id=probe_id, reply_to=inbox.subject,
                                            expires_at=time.time() + PROBE_TIMEOUT))
        try:
            reply = await _first_probe_reply(inbox, started + PROBE_TIMEOUT)
        except TimeoutError:
            return {"ok": False, "error": f"no consumer answered within {PROBE_TIMEOUT:g}s"}
    return {"ok": True, "seconds": round(time.monotonic() - started, 4),
            "answered_by": {"service": reply.service, "service_id": reply.service_id}}


async def _first_probe_reply(inbox: Inbox, deadline: float) -> ProbeReply:
    """The first probe reply to reach ``inbox``; anything else sent there is passed over."""
    while True:
        message = await inbox.next(deadline - time.monotonic())
        with contextlib.suppress(PayloadError):
            if isinstance(reply := decode(message.data), ProbeReply):
                return reply


async def _registered(rt: Runtime) -> list[dict[str, Any]]:
    async with rt.pool.acquire(timeout=DATABASE_TIMEOUT) as conn:
        rows = await services.list_all(conn)
        now = await services.clock(conn)
    return [{"service": r.service, "id": str(r.id), "host": r.host,
             "status": "up" if r.is_up(now) else "down"} for r in rows]


def _down(error: BaseException, dependency: Dependency) -> dict[str, Any]:
    """What health says of a server that failed; a failure that is not the server's is the api's bug."""
    if down_in(error) != dependency and not isinstance(error, TimeoutError):
        raise error
    return {"ok": False, "error": describe(error)}


async def health(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    names = rt.names
    queue_subjects = {"plan": names.plan_probe, "work": names.work_probe, "events": names.events_probe}
    nats_state: dict[str, Any] = {"ok": rt.bus.connected}
    live_lists: list[list[dict[str, Any]]] = [[] for _ in SERVICES]
    queue_results: list[dict[str, Any]] = [{"ok": False, "error": "NATS is unavailable"}
                                           for _ in queue_subjects]
    if nats_state["ok"]:
        try:
            live_lists = list(await asyncio.gather(*(_live(rt, s) for s in SERVICES)))
            probes = (_probe_queue(rt, s) for s in queue_subjects.values())
            queue_results = list(await asyncio.gather(*probes))
        except Exception as exc:  # lost while probing
            nats_state = _down(exc, Dependency.NATS)
    else:
        nats_state["error"] = "not connected; reconnecting"
    try:
        registered = await _registered(rt)
        postgresql: dict[str, Any] = {"ok": True}
    except Exception as exc:
        registered, postgresql = [], _down(exc, Dependency.POSTGRESQL)
    body: dict[str, Any] = {
        "dependencies": {Dependency.POSTGRESQL.value: postgresql, Dependency.NATS.value: nats_state},
        "services": {s: live for s, live in zip(SERVICES, live_lists, strict=True)},
        "queues": dict(zip(queue_subjects, queue_results, strict=True)),
        "registered": registered,
    }
    healthy = (postgresql["ok"] and nats_state["ok"] and all(live_lists)
               and all(q["ok"] for q in queue_results))
    body["status"] = "ok" if healthy else "degraded"
    return web.Response(status=200 if healthy else 503, body=orjson.dumps(body),
                        content_type="application/json")
