"""From NATS notices to delivery rows: one per notice and interested subscription.

The notice is acked only once its rows are committed, and the rows are keyed by
(subscription, notice): a notice NATS brings again adds nothing. A stack's
subscriptions include those of the stacks it is nested in and of its project,
and its environment's ``event_sinks`` of type ``webhook`` (subscriptions
committed with the desired state that declares them, so there before its first
notice: ``subscriptions.follow_environment``).
"""

from __future__ import annotations

import asyncio
import uuid

from libs.db import subscriptions
from libs.messaging.consumer import Delivery
from libs.runtime import Runtime
from libs.telemetry.propagation import Stored
from services.notifier import notices


class Intake:
    def __init__(self, rt: Runtime, wake: asyncio.Event) -> None:
        self.rt = rt
        self.wake = wake

    async def handle(self, notice: notices.Notice, _delivery: Delivery) -> None:
        stack_id = uuid.UUID(notice.stack_id)
        queued = 0
        trace = Stored.of()  # the notice's operation: its deliveries are sent in its trace
        async with self.rt.pool.acquire() as conn:
            wanting = [sub for sub in await subscriptions.reaching(conn, notice.project, stack_id)
                       if notices.wants(sub, notice)]
            if wanting:
                async with conn.transaction():
                    for sub in wanting:
                        queued += await subscriptions.enqueue(
                            conn, sub.id, notices.key_of(notice), _kind(notice),
                            notices.body_of(notice, self.rt.settings.api_url), trace=trace)
        if queued:
            self.wake.set()


def _kind(notice: notices.Notice) -> str:
    return "event" if notice.kind == "event" else "hook"
