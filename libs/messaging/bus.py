"""The NATS connection of one service: streams and consumers ensured, traced publishes.

``Bus`` is entered once per process (``async with Bus.connect(...)``) and drained
on exit, so in-flight publishes and acks reach the server before the socket closes.
Outside ``libs.messaging`` nothing touches the NATS client: core requests and
replies come and go as :class:`Message`, replies to a probe through an :class:`Inbox`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any

import nats
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js import api as js_api
from nats.js.errors import NotFoundError
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import SpanKind, Tracer

from libs.errors import Undeliverable
from libs.messaging.payloads import Payload
from libs.messaging.subjects import ConsumerSpec, Names, StreamSpec
from libs.telemetry import logs, propagation

log = logs.logger("bus")

# JetStream drops a repeated Nats-Msg-Id within this window (the default is 2 min).
DUPLICATE_WINDOW_SECONDS = 600.0
NO_RESPONDERS_STATUS = "503"


@dataclasses.dataclass(frozen=True)
class Message:
    """A core NATS message as a handler or a caller sees it: its subject and its bytes."""

    subject: str
    data: bytes

    @classmethod
    def of(cls, msg: Msg) -> Message:
        return cls(subject=msg.subject, data=msg.data)


@dataclasses.dataclass(frozen=True)
class Outgoing:
    """One message of :meth:`Bus.publish_all`."""

    subject: str
    payload: Payload
    msg_id: str | None = None
    context: Context | None = None
    # More attributes of its span (what the message is about).
    attributes: Mapping[str, str] | None = None


@dataclasses.dataclass(frozen=True)
class Backlog:
    pending: int  # not delivered yet
    unacked: int  # delivered, neither acked nor given up


class Inbox:
    """A subject of this connection's own that collects what is sent to it (replies to probes)."""

    def __init__(self, subject: str) -> None:
        self.subject = subject
        self._received: asyncio.Queue[Message] = asyncio.Queue()

    def put(self, message: Message) -> None:
        self._received.put_nowait(message)

    async def next(self, timeout: float) -> Message:
        """The next message; TimeoutError if none comes within ``timeout`` seconds."""
        return await asyncio.wait_for(self._received.get(), timeout)

    def drain(self) -> list[Message]:
        """Every message received and not yet taken, at once."""
        out = []
        while not self._received.empty():
            out.append(self._received.get_nowait())
        return out


class Bus:
    def __init__(self, nc: Client, names: Names, tracer: Tracer, replicas: int) -> None:
        self.nc = nc
        self.js: JetStreamContext = nc.jetstream()
        self.names = names
        self.tracer = tracer
        self.replicas = replicas

    @classmethod
    @contextlib.asynccontextmanager
    async def connect(cls, url: str, names: Names, tracer: Tracer, *, client_name: str,
                      replicas: int = 1, user: str | None = None, password: str | None = None,
                      inbox_prefix: str | None = None, reconnect_seconds: float = 0.5) -> AsyncIterator[Bus]:
        """Connect as ``user`` (anonymous when None); replies come to ``inbox_prefix``.

        Under authorization each user may only subscribe to its own inboxes
        (:mod:`libs.messaging.permissions`), ``_INBOX.<prefix>.<user>`` unless given.
        """
        async def on_error(exc: Exception) -> None:
            log.warning("nats error: %s", exc)

        closing = False

        async def on_disconnect() -> None:
            if not closing:
                log.warning("nats disconnected; reconnecting")

        async def on_reconnect() -> None:
            log.info("nats reconnected")

        credentials: dict[str, Any] = {"user": user, "password": password} if user else {}
        # A user's inboxes are named after it (libs/messaging/permissions.inbox_prefix).
        inbox_prefix = inbox_prefix or (f"_INBOX.{names.prefix}.{user}" if user else None)
        if inbox_prefix:
            credentials["inbox_prefix"] = inbox_prefix
        nc = await nats.connect(
            servers=[u.strip() for u in url.split(",")],
            **credentials,
            name=client_name,
            error_cb=on_error,
            disconnected_cb=on_disconnect,
            reconnected_cb=on_reconnect,
            max_reconnect_attempts=-1,
            reconnect_time_wait=reconnect_seconds,
            connect_timeout=5,
        )
        bus = cls(nc, names, tracer, replicas)
        try:
            yield bus
        finally:
            closing = True
            with contextlib.suppress(Exception):
                await nc.drain()

    # ---- topology ---------------------------------------------------------
    async def ensure_topology(self, attempts_seconds: float = 30.0, *,
                              streams: Sequence[StreamSpec] | None = None,
                              consumers: Sequence[ConsumerSpec] | None = None) -> None:
        """Create the streams and durable consumers (all unless given), or update them to this config.

        A service ensures only those it uses: its NATS user may touch no others.

        Idempotent and safe when several services start at once: JetStream accepts
        an identical ``add_stream`` as a no-op. A fresh cluster needs a moment to
        elect its meta leader, hence the retry.
        """
        deadline = asyncio.get_running_loop().time() + attempts_seconds
        # Until a meta leader exists, JetStream requests go unanswered rather than
        # failing; a short timeout makes the retry prompt.
        js = self.nc.jetstream(timeout=1.0)
        while True:
            try:
                for stream in self.names.streams if streams is None else streams:
                    await self._ensure_stream(js, stream)
                for consumer in self.names.consumers if consumers is None else consumers:
                    await self._ensure_consumer(js, consumer)
                return
            except (nats.errors.TimeoutError, nats.js.errors.ServiceUnavailableError,
                    nats.js.errors.ServerError) as exc:
                if asyncio.get_running_loop().time() > deadline:
                    raise
                log.info("jetstream not ready yet (%s); retrying", exc)
                await asyncio.sleep(0.5)

    async def _ensure_stream(self, js: JetStreamContext, spec: StreamSpec) -> None:
        config = js_api.StreamConfig(
            name=spec.name,
            subjects=list(spec.subjects),
            retention=(js_api.RetentionPolicy.WORK_QUEUE if spec.retention == "workqueue"
                       else js_api.RetentionPolicy.LIMITS),
            storage=js_api.StorageType.FILE,
            max_age=spec.max_age_seconds,
            num_replicas=self.replicas,
            duplicate_window=DUPLICATE_WINDOW_SECONDS,
        )
        try:
            await js.stream_info(spec.name)
        except NotFoundError:
            await js.add_stream(config)
        else:
            await js.update_stream(config)

    async def _ensure_consumer(self, js: JetStreamContext, spec: ConsumerSpec) -> None:
        config = js_api.ConsumerConfig(
            durable_name=spec.durable,
            ack_policy=js_api.AckPolicy.EXPLICIT,
            ack_wait=spec.ack_wait_seconds,
            max_deliver=spec.max_deliver,
            filter_subject=spec.filter_subject,
            deliver_policy=js_api.DeliverPolicy.ALL,
            max_ack_pending=20000,
            max_waiting=512,
        )
        await js.add_consumer(spec.stream, config)

    # ---- publishing ---------------------------------------------------------
    async def publish(self, subject: str, payload: Payload, *, msg_id: str | None = None,
                      context: Context | None = None, attributes: Mapping[str, str] | None = None) -> None:
        """Publish to JetStream and wait for the stream's ack, with trace context in headers.

        The message belongs to the operation of the current span, or of ``context``
        where the caller acts for several (a worker's batch publishes each item's
        successors in that item's trace).
        """
        failed = (await self.publish_all([Outgoing(subject, payload, msg_id, context, attributes)]))[0]
        if failed is not None:
            raise failed

    async def publish_all(self, outgoing: Sequence[Outgoing]) -> list[BaseException | None]:
        """Publish each message as :meth:`publish` does, all at once; what each raised, or None.

        The messages are written in order and their acks awaited together: one
        round trip for a batch rather than one per message (a planner's first
        wave of 10^4 nodes, a notifier's batch of events). Each has its span, from
        its write to its ack; none waits in a task of its own (half the CPU of one each).
        """
        results: list[BaseException | None] = [None] * len(outgoing)
        acks: dict[asyncio.Future[Any], int] = {}
        try:
            for index, out in enumerate(outgoing):
                failed = await self._write(out, acks, index)
                if failed is not None:
                    results[index] = failed
            if acks:
                await asyncio.wait(acks, timeout=ACK_SECONDS)
        finally:
            # An ack that never came (a message lost in a reconnect) would hold its place among
            # the client's pending publishes for ever: given up, as a publish's timeout gives up.
            for ack in acks:
                ack.cancel()
        for ack, index in acks.items():
            results[index] = _failure(ack)
        return results

    async def _write(self, out: Outgoing, acks: dict[asyncio.Future[Any], int], index: int
                     ) -> BaseException | None:
        """Write one message, its ack put in ``acks``; what failed before it was written."""
        span = self.tracer.start_span(
            f"publish {out.payload.kind}", context=out.context, kind=SpanKind.PRODUCER,
            attributes={"messaging.destination": out.subject, **(out.attributes or {})})
        headers = propagation.inject({}, trace.set_span_in_context(span, out.context))
        if out.msg_id is not None:
            headers["Nats-Msg-Id"] = out.msg_id
        data = out.payload.to_bytes()
        failed: BaseException
        try:
            ack = await self.js.publish_async(out.subject, data, headers=headers)
        except (nats.errors.MaxPayloadError, nats.errors.BadSubjectError) as exc:
            # The same bytes fail the same way on every try: the caller sets them aside.
            failed = Undeliverable(f"{out.payload.kind} message of {len(data)} bytes on {out.subject}:"
                                   f" {exc} (limit {self.nc.max_payload} bytes)")
        except Exception as exc:  # the caller decides, per message
            failed = exc
        else:
            ack.add_done_callback(functools.partial(_ended, span))
            acks[ack] = index
            return None
        _end(span, failed)
        return failed

    @property
    def connected(self) -> bool:
        return bool(self.nc.is_connected)

    async def reply(self, subject: str, payload: Payload) -> None:
        """A core NATS message to a reply subject (no JetStream), in the current trace."""
        await self.nc.publish(subject, payload.to_bytes(), headers=propagation.inject({}))

    @contextlib.asynccontextmanager
    async def inbox(self) -> AsyncIterator[Inbox]:
        """An inbox of this connection, listened to while the block runs."""
        box = Inbox(self.nc.new_inbox())

        async def on_message(msg: Msg) -> None:
            box.put(Message.of(msg))

        sub = await self.nc.subscribe(box.subject, cb=on_message)
        try:
            yield box
        finally:
            await sub.unsubscribe()

    async def backlog(self, consumer: ConsumerSpec) -> Backlog:
        """What a durable consumer has yet to deliver, and what it delivered and awaits acks for."""
        info = await self.js.consumer_info(consumer.stream, consumer.durable)
        return Backlog(pending=int(info.num_pending or 0), unacked=int(info.num_ack_pending or 0))

    async def delete_stream(self, name: str) -> None:
        await self.js.delete_stream(name)

    async def gather_replies(self, subject: str, data: bytes, timeout: float,
                             expected: int | None = None) -> list[Message]:
        """Publish once and collect every reply until ``timeout`` (or ``expected`` replies)."""
        inbox = self.nc.new_inbox()
        replies: list[Message] = []
        done = asyncio.Event()

        async def on_reply(msg: Msg) -> None:
            if msg.headers and msg.headers.get(js_api.Header.STATUS) == NO_RESPONDERS_STATUS:
                return  # the server saying nobody listens (yet, after a restart): not a reply
            replies.append(Message.of(msg))
            if expected is not None and len(replies) >= expected:
                done.set()

        sub = await self.nc.subscribe(inbox, cb=on_reply)
        try:
            with self.tracer.start_as_current_span(f"scatter {subject}", kind=SpanKind.CLIENT):
                await self.nc.publish(subject, data, reply=inbox, headers=propagation.inject({}))
                await self.nc.flush()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(done.wait(), timeout)
        finally:
            await sub.unsubscribe()
        return replies

    async def serve(self, subject: str, handler: Callable[[Message], Awaitable[bytes]],
                    queue: str = "") -> Any:
        """Answer core NATS requests on ``subject`` (a queue group, if named, shares them).

        The handler runs in the requester's trace, and the reply carries it back.
        """

        async def on_request(msg: Msg) -> None:
            parent = propagation.extract(msg.headers)
            with self.tracer.start_as_current_span(f"serve {msg.subject}", context=parent,
                                                   kind=SpanKind.SERVER):
                try:
                    body = await handler(Message.of(msg))
                except Exception:
                    log.exception("control request on %s failed", msg.subject)
                    trace.get_current_span().set_status(trace.StatusCode.ERROR)
                    return
                if msg.reply:
                    await self.nc.publish(msg.reply, body, headers=propagation.inject({}))

        return await self.nc.subscribe(subject, queue=queue, cb=on_request)


# How long a published message's ack is awaited (what nats-py's JetStream publish waits).
ACK_SECONDS = 5.0


def _failure(ack: asyncio.Future[Any]) -> BaseException | None:
    if ack.cancelled():
        return nats.errors.TimeoutError()
    return ack.exception()


def _ended(span: trace.Span, ack: asyncio.Future[Any]) -> None:
    _end(span, _failure(ack))


def _end(span: trace.Span, error: BaseException | None) -> None:
    if error is not None:
        span.record_exception(error)
        span.set_status(trace.Status(trace.StatusCode.ERROR, str(error)))
    span.end()
