"""From notices to delivery rows: one per notice and interested subscription.

Hook notices come from NATS (a worker publishes them): each is acked only once
its rows are committed. Event notices are queued by the outbox that publishes
them, in the transaction that marks their events published
(``services/notifier/outbox.py``), rather than read back from NATS: a stack of
10^6 resources writes 2 x 10^6 events. Either way the rows are keyed by
(subscription, notice), so a notice met again adds nothing. A stack's
subscriptions include those of the stacks it is nested in and of its project,
and its environment's ``event_sinks`` of type ``webhook`` (subscriptions
committed with the desired state that declares them, so there before its first
notice: ``subscriptions.follow_environment``).
"""

from __future__ import annotations

import asyncio
import uuid

from libs.db import Conn, subscriptions
from libs.messaging.consumer import Delivery
from libs.runtime import Runtime
from libs.telemetry.propagation import Stored
from services.notifier import notices


class Intake:
    def __init__(self, rt: Runtime, wake: asyncio.Event) -> None:
        self.rt = rt
        self.wake = wake

    async def handle(self, notice: notices.Notice, _delivery: Delivery) -> None:
        trace = Stored.of()  # the notice's operation: its deliveries are sent in its trace
        async with self.rt.pool.acquire() as conn:
            queued = await queue(conn, self.rt.settings.api_url, notice, trace)
        if queued:
            self.wake.set()


async def queue(conn: Conn, api_url: str, notice: notices.Notice, trace: Stored,
                reaching: list[subscriptions.Subscription] | None = None) -> int:
    """The notice's deliveries, one per subscription that wants it (``reaching``: the notice's
    stack's subscriptions, when the caller has them); how many were new."""
    if reaching is None:
        reaching = await subscriptions.reaching(conn, notice.project, uuid.UUID(notice.stack_id))
    wanting = [sub for sub in reaching if notices.wants(sub, notice)]
    if not wanting:
        return 0
    queued = 0
    async with conn.transaction():
        for sub in wanting:
            queued += await subscriptions.enqueue(conn, sub.id, notices.key_of(notice), _kind(notice),
                                                  notices.body_of(notice, api_url), trace=trace)
    return queued


def _kind(notice: notices.Notice) -> str:
    return "event" if notice.kind == "event" else "hook"
