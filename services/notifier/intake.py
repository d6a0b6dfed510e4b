"""From NATS notices to delivery rows: one per notice and interested subscription.

The notice is acked only once its rows are committed, and the rows are keyed by
(subscription, notice): a notice NATS brings again adds nothing. A stack's
subscriptions include those of the stacks it is nested in and of its project,
and its environment's ``event_sinks`` of type ``webhook`` (made into
subscriptions the first time a notice of that desired state comes by).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from libs.db import Conn, subscriptions, templates
from libs.messaging.consumer import Delivery
from libs.runtime import Runtime
from libs.telemetry.propagation import Stored
from services.notifier import notices

# Environment sinks are subscriptions with ids derived from where they are declared.
_SINK_NAMESPACE = uuid.UUID("5b0f8d3e-6a8e-4c61-9a55-3c1f4ad7e2b1")


class Intake:
    def __init__(self, rt: Runtime, wake: asyncio.Event) -> None:
        self.rt = rt
        self.wake = wake
        self._sinks_seen: set[tuple[uuid.UUID, uuid.UUID]] = set()

    async def handle(self, notice: notices.Notice, _delivery: Delivery) -> None:
        stack_id = uuid.UUID(notice.stack_id)
        queued = 0
        trace = Stored.of()  # the notice's operation: its deliveries are sent in its trace
        async with self.rt.pool.acquire() as conn, conn.transaction():
            chain = await self._chain(conn, stack_id)
            for sub in await subscriptions.reaching(conn, notice.project, [s for s, _ in chain]):
                if notices.wants(sub, notice):
                    queued += await subscriptions.enqueue(conn, sub.id, notices.key_of(notice), _kind(notice),
                                                          notices.body_of(notice, self.rt.settings.api_url),
                                                          trace=trace)
        if queued:
            self.wake.set()

    async def _chain(self, conn: Conn, stack_id: uuid.UUID) -> list[tuple[uuid.UUID, uuid.UUID | None]]:
        """The stack and those it is nested in; their environments' sinks made subscriptions."""
        chain: list[tuple[uuid.UUID, uuid.UUID | None]] = []
        current: uuid.UUID | None = stack_id
        while current is not None and len(chain) < 64:
            row = await conn.fetchrow("SELECT parent_id, template_id, project FROM stacks WHERE id = $1",
                                      current)
            if row is None:
                break
            chain.append((current, row["template_id"]))
            if row["template_id"] is not None:
                await self._environment_sinks(conn, current, row["template_id"], row["project"])
            current = row["parent_id"]
        return chain

    async def _environment_sinks(self, conn: Conn, stack_id: uuid.UUID, template_id: uuid.UUID,
                                 project: str) -> None:
        if (stack_id, template_id) in self._sinks_seen:
            return
        raw = await templates.get(conn, template_id)
        sinks = [s for s in (raw.environment or {}).get("event_sinks") or []
                 if isinstance(s, dict) and s.get("type") == "webhook"]
        ids = []
        for index, sink in enumerate(sinks):
            sub = _sink_subscription(project, stack_id, index, sink)
            ids.append(sub.id)
            await subscriptions.add(conn, sub)
        # A sink the stack's new environment no longer has stops receiving.
        await conn.execute("DELETE FROM subscriptions WHERE stack_id = $1 AND source = 'environment'"
                           " AND NOT (id = ANY($2::uuid[]))", stack_id, ids)
        self._sinks_seen.add((stack_id, template_id))


def _sink_subscription(project: str, stack_id: uuid.UUID, index: int, sink: dict[str, Any]
                       ) -> subscriptions.Subscription:
    target = str(sink["target"])
    kinds = sink.get("kinds") or ["event", "hook"]
    hooks = sink.get("hooks")
    return subscriptions.Subscription(
        id=uuid.uuid5(_SINK_NAMESPACE, f"{stack_id}:{index}:{target}"), project=project, stack_id=stack_id,
        url=target, secret=str(sink.get("secret") or ""), kinds=[str(k) for k in kinds],
        resource=str(sink.get("resource") or "*"),
        hooks=[str(h) for h in hooks] if isinstance(hooks, list) else None, source="environment")


def _kind(notice: notices.Notice) -> str:
    return "event" if notice.kind == "event" else "hook"
