"""``ember notifier``: events out to NATS, and event and hook notices out to webhooks."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from libs import lifecycle
from libs.consuming import dead_letter_sink
from libs.db import subscriptions
from libs.messaging.consumer import Consumer
from libs.messaging.dispatch import Dispatch
from libs.messaging.max_deliveries import watching
from libs.messaging.payloads import HookNotice, Probe
from libs.runtime import Runtime
from services.notifier.delivery import delivering
from services.notifier.intake import Intake
from services.notifier.outbox import publishing


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    wake = asyncio.Event()
    async with rt.pool.acquire() as conn:
        await subscriptions.follow_environments_not_followed(conn)
    intake = Intake(rt, wake)
    # Event notices are not read back: the outbox queues their deliveries as it publishes them.
    # The events consumer takes only the health probe.
    dispatch = Dispatch({Probe: rt.answer_probe, HookNotice: intake.handle})
    sink = dead_letter_sink(rt, stack_events=False)
    specs = (rt.names.notifier_events, rt.names.notifier_hooks)
    consumers = [Consumer(rt.bus, spec, dispatch, concurrency=16, logger_name=rt.service, dead_letter=sink)
                 for spec in specs]
    async with (publishing(rt, wake), delivering(rt, wake),
                watching(rt.bus, specs[0], give_up=None, dead_letter=sink, logger_name=rt.service),
                watching(rt.bus, specs[1], give_up=None, dead_letter=sink, logger_name=rt.service)):
        for consumer in consumers:
            await consumer.start()
        try:
            yield
        finally:
            for consumer in consumers:
                await consumer.stop(rt.settings.shutdown_grace)


def main() -> None:
    lifecycle.run("notifier", body)
