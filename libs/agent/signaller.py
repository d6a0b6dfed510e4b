"""Sending a run's result where its config says, as heat-config-notify does, tried again with backoff.

Connection errors, timeouts, 5xx, 408 and 429 are tried again, the wait
doubling from ``--signal-retry-seconds`` up to 30 s, ``--signal-attempts``
times in all; any other answer, or the last attempt failing, ends the
delivery: the caller records it as given up and logs why.

NATS_SIGNAL's result is published to JetStream (:mod:`libs.messaging.deployment_signals`)
and delivered once the stream acked it; NATS failing or not answering is tried again as
above. An agent without NATS settings gives it up at once, saying so.
"""

from __future__ import annotations

import asyncio
import dataclasses
from urllib.parse import urlsplit

import aiohttp
import orjson

from libs.agent import results, signals
from libs.agent.configs import DerivedConfig
from libs.agent.settings import MAX_SIGNAL_WAIT_SECONDS, AgentSettings
from libs.agent.signals import Answer, Nowhere, ToHeat, ToNats, ToUrl
from libs.messaging import deployment_signals
from libs.messaging.failures import BUS_ERROR
from libs.telemetry import logs

log = logs.logger("agent")
REQUEST_TIMEOUT = aiohttp.ClientTimeout(total=30)
# How long one publish of a NATS_SIGNAL waits for the stream's ack.
PUBLISH_TIMEOUT_SECONDS = 10.0
JSON = {"Content-Type": "application/json"}


@dataclasses.dataclass(frozen=True)
class Delivery:
    delivered: bool
    attempts: int
    # Where it went, or why it was not sent.
    detail: str


def shown(url: str) -> str:
    """A URL fit for logs: a presigned signal URL's query is its secret."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"


class Signaller:
    def __init__(self, session: aiohttp.ClientSession, settings: AgentSettings) -> None:
        self._session = session
        self._settings = settings
        self._backoff = signals.Backoff(settings.signal_attempts, settings.signal_retry_seconds,
                                        MAX_SIGNAL_WAIT_SECONDS)

    async def deliver(self, config: DerivedConfig, result: dict[str, object]) -> Delivery:
        goal = signals.target(config)
        if isinstance(goal, Nowhere):
            return Delivery(not goal.fault, 0, goal.why)
        if isinstance(goal, ToNats) and self._settings.nats_url is None:
            return Delivery(False, 0, f"NATS_SIGNAL to {goal.subject}, but this agent has no NATS settings "
                                      "(--nats-url, EMBER_AGENT_NATS_URL): the result is not sent")
        body = orjson.dumps(results.fitted(dict(result), self._settings.signal_body_limit))
        attempt = 0
        while True:
            attempt += 1
            try:
                verdict, detail = (await self._publish(goal, body, config.key) if isinstance(goal, ToNats)
                                   else await self._once(goal, body))
            except (aiohttp.ClientError, TimeoutError, OSError, ValueError, BUS_ERROR) as exc:
                verdict, detail = Answer.RETRY, f"{type(exc).__name__}: {exc}"
            wait = None if verdict is not Answer.RETRY else self._backoff.wait_after(attempt)
            if wait is None:
                return Delivery(verdict is Answer.DELIVERED, attempt, detail)
            log.info("signal not delivered; trying again", extra={
                "key": config.key, "attempt": attempt, "detail": detail, "wait_seconds": wait})
            await asyncio.sleep(wait)

    async def _publish(self, goal: ToNats, body: bytes, key: str) -> tuple[Answer, str]:
        settings = self._settings
        assert settings.nats_url is not None
        publisher = deployment_signals.Publisher(
            settings.nats_url, settings.nats_prefix, settings.nats_user, settings.nats_password,
            client_name=f"ember-agent-{settings.server_id}-signal")
        acked = await deployment_signals.publish(publisher, goal.subject, body, msg_id=key,
                                                 timeout=PUBLISH_TIMEOUT_SECONDS)
        return Answer.DELIVERED, f"published to {goal.subject}: {acked}"

    async def _once(self, goal: ToUrl | ToHeat, body: bytes) -> tuple[Answer, str]:
        if isinstance(goal, ToUrl):
            async with self._session.request(goal.verb, goal.url, data=body, headers=JSON,
                                             timeout=REQUEST_TIMEOUT) as response:
                return signals.answer(response.status), f"{goal.verb} {shown(goal.url)}: {response.status}"
        async with self._session.post(goal.tokens_url, json=goal.auth_body(),
                                      timeout=REQUEST_TIMEOUT) as auth:
            if signals.answer(auth.status) is not Answer.DELIVERED:
                return signals.answer(auth.status), f"token from {shown(goal.tokens_url)}: {auth.status}"
            token = auth.headers.get("X-Subject-Token", "")
            catalog = await auth.json(content_type=None)
        # Keystone's catalog names the orchestration API; an identity without one is Ember's own.
        endpoint = (signals.orchestration_endpoint(catalog, goal.region)
                    or f"{self._settings.api_url}/v1/{goal.project_id}")
        url = goal.signal_url(endpoint)
        async with self._session.post(url, data=body, headers={**JSON, "X-Auth-Token": token},
                                      timeout=REQUEST_TIMEOUT) as response:
            return signals.answer(response.status), f"POST {shown(url)}: {response.status}"
