"""Where the agent hears of its server's configs: polling the API, and pushes on NATS.

Both hand the whole list (``{"metadata": [...]}``'s list) to the same
``offer``; the journal makes a config offered twice, or by both, run once.
Polling goes on while pushes arrive: a push missed while NATS was away costs
one interval. A failing source logs one line per failure and keeps trying.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import aiohttp
from opentelemetry import trace

from libs.agent.credentials import Tokens
from libs.agent.settings import AgentSettings
from libs.messaging import deployments
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.telemetry import logs

log = logs.logger("agent")
Offer = Callable[[list[Any], str], None]
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
# Between tries to reach NATS (the client's own reconnects, and a connect that failed outright).
NATS_RETRY_SECONDS = 5.0


async def _get(session: aiohttp.ClientSession, settings: AgentSettings, tokens: Tokens) -> tuple[int, Any]:
    headers = {"Accept": "application/json", **tokens.headers()}
    async with session.get(settings.metadata_url, headers=headers, timeout=REQUEST_TIMEOUT) as response:
        if response.status != 200:
            return response.status, (await response.text())[:200]
        return 200, await response.json(content_type=None)


async def fetch(session: aiohttp.ClientSession, settings: AgentSettings, tokens: Tokens) -> list[Any] | str:
    """The server's derived configs from the API, or why not; a 401 gets a new token and asks again."""
    try:
        status, body = await _get(session, settings, tokens)
        if status == 401 and tokens.renewable:
            problem = await tokens.renew()
            if problem is not None:
                return problem
            status, body = await _get(session, settings, tokens)
    except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    if status != 200:
        return f"{status} {body}"
    metadata = body.get("metadata") if isinstance(body, dict) else None
    return metadata if isinstance(metadata, list) else "the answer is not {\"metadata\": [...]}"


async def poll(session: aiohttp.ClientSession, settings: AgentSettings, tokens: Tokens, offer: Offer) -> None:
    """Offer what the API lists, now and every interval, for ever."""
    while True:
        found = await fetch(session, settings, tokens)
        if isinstance(found, str):
            log.warning("could not read the server's deployments", extra={
                "url": settings.metadata_url, "problem": found})
        else:
            offer(found, "poll")
        await asyncio.sleep(settings.interval)


async def listen(settings: AgentSettings, offer: Offer) -> None:
    """Offer what is pushed for this server, for ever; trying again while NATS is away."""
    if settings.nats_url is None:
        return
    while True:
        try:
            async with Bus.connect(settings.nats_url, Names(settings.nats_prefix),
                                   trace.get_tracer("ember.agent"),
                                   client_name=f"ember-agent-{settings.server_id}", user=settings.nats_user,
                                   password=settings.nats_password,
                                   reconnect_seconds=NATS_RETRY_SECONDS) as bus, \
                    deployments.listening(bus, settings.project, settings.server_id,
                                          lambda metadata: offer(metadata, "push")):
                log.info("listening for pushed deployments", extra={
                    "subject": bus.names.deployments(settings.project, settings.server_id)})
                # The client reconnects and subscribes again by itself from here on.
                await asyncio.Event().wait()
        except Exception as exc:
            log.warning("could not listen on NATS; polling goes on", extra={
                "problem": f"{type(exc).__name__}: {exc}", "retry_seconds": NATS_RETRY_SECONDS})
        await asyncio.sleep(NATS_RETRY_SECONDS)
