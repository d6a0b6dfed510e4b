"""``GET /ember/v1/health``: which services live, and whether each queue flows.

Live processes answer a control ping (core NATS, every instance replies). Each
queue is probed by publishing a ``Probe`` through JetStream to the durable
consumer that drains it: a reply proves the stream, the consumer and at least
one consuming process all work.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import orjson
from aiohttp import web

from libs.db import services
from libs.messaging.payloads import Probe, ProbeReply, decode
from libs.messaging.subjects import SERVICES
from libs.runtime import Runtime
from services.api.keys import RUNTIME

PING_TIMEOUT = 0.5
PROBE_TIMEOUT = 3.0


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
    inbox = rt.bus.nc.new_inbox()
    answered: asyncio.Future[ProbeReply] = asyncio.get_running_loop().create_future()

    async def on_reply(msg: Any) -> None:
        reply = decode(msg.data)
        if isinstance(reply, ProbeReply) and not answered.done():
            answered.set_result(reply)

    sub = await rt.bus.nc.subscribe(inbox, cb=on_reply)
    started = time.monotonic()
    try:
        await rt.bus.publish(subject, Probe(probe_id=probe_id, reply_to=inbox,
                                            expires_at=time.time() + PROBE_TIMEOUT))
        reply = await asyncio.wait_for(answered, PROBE_TIMEOUT)
    except TimeoutError:
        return {"ok": False, "error": f"no consumer answered within {PROBE_TIMEOUT:g}s"}
    finally:
        await sub.unsubscribe()
    return {"ok": True, "seconds": round(time.monotonic() - started, 4),
            "answered_by": {"service": reply.service, "service_id": reply.service_id}}


async def health(request: web.Request) -> web.Response:
    rt = request.app[RUNTIME]
    live_lists = await asyncio.gather(*(_live(rt, s) for s in SERVICES))
    names = rt.names
    queue_subjects = {"plan": names.plan_probe, "work": names.work_probe, "events": names.events_probe}
    queue_results = await asyncio.gather(*(_probe_queue(rt, s) for s in queue_subjects.values()))
    async with rt.pool.acquire() as conn:
        rows = await services.list_all(conn)
        now = await conn.fetchval("SELECT now()")
    body = {
        "services": {s: live for s, live in zip(SERVICES, live_lists, strict=True)},
        "queues": dict(zip(queue_subjects, queue_results, strict=True)),
        "registered": [{"service": r.service, "id": str(r.id), "host": r.host,
                        "status": "up" if r.is_up(now) else "down"} for r in rows],
    }
    healthy = all(live_lists) and all(q["ok"] for q in queue_results)
    body["status"] = "ok" if healthy else "degraded"
    return web.Response(status=200 if healthy else 503, body=orjson.dumps(body),
                        content_type="application/json")
