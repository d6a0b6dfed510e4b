"""Every event goes out on NATS once: ``<prefix>.events.<project>.<stack>``.

Events are written by whichever service acts, inside its own transactions; the
notifier publishes what is not yet published, oldest first, with the event's id
as the message id (a crash between publish and commit publishes again, and
JetStream drops the copy) and the trace context of the operation that wrote it.
It wakes on the ``ember_events`` notification and also polls, so a missed
notification costs a delay, never an event. An event NATS can never take is set
aside (``dead_letters``) so that it holds up no other.

The transaction that marks events published also queues their webhook deliveries
(``services/notifier/intake.py``). After each round it purges, as Heat's
``max_events_per_stack`` does, the oldest published events of the stacks it
published for (``EMBER_MAX_EVENTS_PER_STACK``): here rather than where events
are written, so that no worker's batched write counts anything, and only once
published, so that no event is lost unsent. A stack keeps as many events as Heat
would have kept after the same writes.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator, Mapping

from libs import background
from libs.db import Conn, dead_letters, events, listener, subscriptions
from libs.engine.drift import Shown
from libs.errors import describe, is_transient
from libs.messaging.bus import Outgoing
from libs.messaging.payloads import DriftNotice, EventNotice
from libs.runtime import Runtime
from libs.telemetry import logs
from libs.telemetry.propagation import Stored
from services.notifier import intake

log = logs.logger("notifier")
CHANNEL = "ember_events"
BATCH = 500
SOURCE = "events-outbox"


async def publish_pending(rt: Runtime, deliveries: asyncio.Event | None = None) -> int:
    """Publish one batch of unpublished events; how many were taken (published or set aside).

    The batch's notices are published together (their acks awaited at once),
    each in the trace of the operation that wrote its event.
    An event NATS can never take is set aside as a dead letter rather than
    retried: retried, it would stop every project's notices behind it. NATS
    being away ends the round at the first event it refused; the events before
    stay published, and those after that went out anyway go out again next
    round under the same message id (JetStream drops the copies). ``deliveries``
    is set when webhook deliveries were queued.
    """
    away: BaseException | None = None
    async with rt.pool.acquire() as conn, conn.transaction():
        rows = await events.take_unpublished(conn, BATCH)
        sends = [_Send.of(rt, row) for row in rows]
        outcomes = iter(await rt.bus.publish_all([o for send in sends for o in send.outgoing]))
        taken: list[int] = []
        sent: list[_Send] = []
        for row, send in zip(rows, sends, strict=True):
            errors = [next(outcomes) for _ in send.outgoing]
            if away is not None:
                continue
            for out, error in zip(send.outgoing, errors, strict=True):
                if error is None:
                    continue
                if is_transient(error):
                    away = error
                    break
                await _set_aside(conn, send.notice, out.subject, error)
            if away is None:
                taken.append(row.event.seq)
                if not any(errors):
                    sent.append(send)
        if taken:
            await events.mark_published(conn, taken)
        queued = await _queue_deliveries(conn, rt.settings.api_url, sent)
    if queued and deliveries is not None:
        deliveries.set()
    published = {row.event.seq: row.event.stack_id for row in rows}
    await purge(rt, collections.Counter(published[seq] for seq in taken))
    if away is not None:
        raise away
    return len(rows)


async def _queue_deliveries(conn: Conn, api_url: str, sent: list[_Send]) -> int:
    """The webhook deliveries of the events published: each stack's subscriptions read once."""
    reaching: dict[tuple[str, str], list[subscriptions.Subscription]] = {}
    queued = 0
    for send in sent:
        notice = send.notice
        key = (notice.project, notice.stack_id)
        if key not in reaching:
            reaching[key] = await subscriptions.reaching(conn, notice.project, uuid.UUID(notice.stack_id))
        queued += await intake.queue(conn, api_url, notice, send.trace, reaching[key])
    return queued


@dataclasses.dataclass(frozen=True)
class _Send:
    """An event's notices (a drift event is a drift notice too), in the trace of the operation
    that wrote it (their publish spans carry the event's ids: one span each, no span around)."""

    notice: EventNotice
    outgoing: list[Outgoing]
    trace: Stored

    @classmethod
    def of(cls, rt: Runtime, row: events.Unpublished) -> _Send:
        notice = _notice(row)
        ids = {"ember.stack_id": notice.stack_id, "ember.event_id": notice.id}
        context = row.written_by.context()
        names = rt.names
        subject = names.events(notice.project, notice.stack_id)
        outgoing = [Outgoing(subject, notice, notice.msg_id, context, ids)]
        drift = _drift_notice(row)
        if drift is not None:
            drifted = names.drift(drift.project, drift.stack_id)
            outgoing.append(Outgoing(drifted, drift, drift.msg_id, context, ids))
        return cls(notice, outgoing, row.written_by)


async def purge(rt: Runtime, published: Mapping[uuid.UUID, int]) -> None:
    """Heat's event purge of each stack that has just had ``published[stack]`` events published:
    what Heat, purging before each write, would have kept after those (none when every event is kept).
    """
    retention = rt.settings.event_retention
    if retention.keeps_all:
        return
    async with rt.pool.acquire() as conn:
        for stack_id in sorted(published):
            # At the limit or under it after these events, Heat never found it over before a write.
            held = await events.published_over(conn, stack_id, retention.max_events)
            if held is None:
                continue
            written = published[stack_id]
            keep = retention.kept_after(max(held - written, 0), written)
            gone = await events.purge(conn, stack_id, keep=keep, batch=retention.purge_batch)
            if gone:
                log.debug("purged %d events of stack %s", gone, stack_id)


def _notice(row: events.Unpublished) -> EventNotice:
    event = row.event
    return EventNotice(
        id=str(event.id), project=row.project, stack_id=str(event.stack_id),
        stack_name=row.stack_name, resource_name=event.resource_name,
        physical_resource_id=event.physical_resource_id, resource_type=event.resource_type,
        resource_action=event.action, resource_status=event.resource_status,
        resource_status_reason=event.reason,
        event_time=_time(event), traversal_id=str(event.traversal_id or ""))


def _drift_notice(row: events.Unpublished) -> DriftNotice | None:
    """The drift notice of a drift event (the observer's: its properties carry the drift)."""
    shown = Shown.of(row.event.properties)
    if shown is None:
        return None
    event = row.event
    return DriftNotice(
        event_id=str(event.id), project=row.project, stack_id=str(event.stack_id), stack_name=row.stack_name,
        resource_name=event.resource_name, drift=shown.drift.kind.value, fields=list(shown.drift.fields),
        detail=shown.drift.detail, action_taken=shown.action_taken.value, resolved=shown.resolved,
        event_time=_time(event))


def _time(event: events.EventRow) -> str:
    return event.created_at.isoformat(timespec="seconds").replace("+00:00", "Z")


async def _set_aside(conn: Conn, notice: EventNotice, subject: str, error: BaseException) -> None:
    """A dead letter, an event on the stack and one log line: the event's notice never goes out."""
    reason = f"notice of event {notice.id} not published: {describe(error)}"
    letter = await dead_letters.add(conn, source=SOURCE, subject=subject, msg_id=notice.msg_id,
                                    stack_id=uuid.UUID(notice.stack_id), reason=reason,
                                    payload=notice.to_bytes())
    log.error("dead letter %s: %s", letter, reason,
              extra={"dead_letter": letter, "stack_id": notice.stack_id})


@contextlib.asynccontextmanager
async def publishing(rt: Runtime, deliveries: asyncio.Event, *, poll_seconds: float = 2.0
                     ) -> AsyncIterator[None]:
    database_url, _ = rt.settings.require_urls()
    wake = asyncio.Event()

    async with (listener.listening(database_url, CHANNEL, lambda _stack_id: wake.set(), wake.set),
                background.draining(lambda: publish_pending(rt, deliveries), BATCH, wake, poll_seconds,
                                    name="publishing events", log=log)):
        yield
