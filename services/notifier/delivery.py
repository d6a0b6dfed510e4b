"""Sending deliveries: a signed POST each, retried with backoff, every attempt recorded.

A delivery is leased before it is sent, so two notifiers never send it at the
same time; a 2xx answer marks it delivered and it is never sent again. The
receiver gets ``X-Ember-Delivery`` (the delivery's id) to recognise the one
case at-least-once leaves open: a notifier that died between the answer and
recording it, and W3C ``traceparent`` (``tracestate``) of the operation whose
notice it is, so its own work joins that trace.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiohttp
import orjson
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from libs import background
from libs.db import subscriptions
from libs.runtime import Runtime
from libs.telemetry import logs, propagation
from services.notifier import notices

log = logs.logger("notifier")
BATCH = 50
LEASE_SECONDS = 60.0
TIMEOUT_SECONDS = 10.0


def retry_in(attempts: int, *, base: float, cap: float = 300.0, limit: int = 8) -> float | None:
    """Seconds before the next attempt after ``attempts`` failed ones, or None: give up."""
    if attempts >= limit:
        return None
    return float(min(base * 2 ** (attempts - 1), cap))


async def deliver_due(rt: Runtime, session: aiohttp.ClientSession) -> int:
    async with rt.pool.acquire() as conn:
        due = await subscriptions.lease_due(conn, limit=BATCH, lease_seconds=LEASE_SECONDS)
    await asyncio.gather(*(_send(rt, session, d, sub) for d, sub in due))
    return len(due)


async def _send(rt: Runtime, session: aiohttp.ClientSession, delivery: subscriptions.Delivery,
                sub: subscriptions.Subscription) -> None:
    with rt.bus.tracer.start_as_current_span(
            f"deliver {delivery.kind}", context=delivery.trace.context(), kind=SpanKind.CLIENT,
            attributes={"ember.delivery_id": str(delivery.id), "ember.notice": delivery.notice_key,
                        "ember.attempt": delivery.attempts + 1, "http.request.method": "POST",
                        # Not the URL: its path or query may hold a receiver's token.
                        "server.address": urlsplit(sub.url).hostname or ""}) as span:
        await _attempt(rt, session, delivery, sub, span)


async def _attempt(rt: Runtime, session: aiohttp.ClientSession, delivery: subscriptions.Delivery,
                   sub: subscriptions.Subscription, span: trace.Span) -> None:
    body = orjson.dumps(delivery.body)
    headers = propagation.inject({"Content-Type": "application/json", "X-Ember-Delivery": str(delivery.id),
                                  "X-Ember-Kind": delivery.kind,
                                  "X-Ember-Signature": notices.signature(sub.secret, body)})
    status: int | None = None
    error = ""
    try:
        async with session.post(sub.url, data=body, headers=headers,
                                timeout=aiohttp.ClientTimeout(total=TIMEOUT_SECONDS)) as answer:
            status = answer.status
            span.set_attribute("http.response.status_code", status)
            if 200 <= status < 300:
                async with rt.pool.acquire() as conn:
                    await subscriptions.delivered(conn, delivery.id, status)
                log.info("delivered %s to %s", delivery.notice_key, sub.url)
                return
            error = f"HTTP {status}: {(await answer.text())[:200]}"
    except (aiohttp.ClientError, TimeoutError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    span.set_status(trace.StatusCode.ERROR, error[:200])
    wait = retry_in(delivery.attempts + 1, base=rt.settings.notify_retry_seconds)
    async with rt.pool.acquire() as conn:
        await subscriptions.attempt_failed(conn, delivery.id, error=error, status_code=status, retry_in=wait)
    log.warning("delivery %s to %s failed (%s); %s", delivery.id, sub.url, error,
                "giving up" if wait is None else f"again in {wait:g}s")


@contextlib.asynccontextmanager
async def delivering(rt: Runtime, wake: asyncio.Event, *, poll_seconds: float = 0.5) -> AsyncIterator[None]:
    async with (aiohttp.ClientSession() as session,
                background.draining(lambda: deliver_due(rt, session), BATCH, wake, poll_seconds,
                                    name="delivering notices", log=log)):
        yield
