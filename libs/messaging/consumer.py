"""The pull loop over a durable JetStream consumer.

The handler's result decides the message's fate, here and nowhere else:

=====================================  =====================================
handler                                JetStream outcome
=====================================  =====================================
returns                                ``ack``
raises ``Retry(delay)`` / ``Conflict``  ``nak(delay)``: run again later
raises ``Permanent`` / bad payload      ``term``: never redeliver
cancelled by shutdown                   ``nak(0)``: another process takes it
raises anything else                    ``nak(backoff)``, logged with its traceback
=====================================  =====================================

While a handler runs, the consumer sends ``in_progress`` so the server does not
redeliver a long step to someone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Literal

import nats.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from libs.errors import Permanent, Retry
from libs.messaging.bus import Bus
from libs.messaging.payloads import Payload, PayloadError, decode
from libs.messaging.subjects import ConsumerSpec
from libs.telemetry import logs, propagation

Action = Literal["ack", "nak", "term"]


@dataclasses.dataclass(frozen=True)
class Outcome:
    action: Action
    delay: float = 0.0
    reason: str = ""


def backoff(num_delivered: int) -> float:
    """Delay after an unexpected error: 0.5 s doubling per delivery, at most a minute."""
    return float(min(0.5 * 2 ** max(num_delivered - 1, 0), 60.0))


def outcome_for(error: BaseException | None, num_delivered: int) -> Outcome:
    """The one mapping from a handler's result to a JetStream outcome."""
    if error is None:
        return Outcome("ack")
    if isinstance(error, Retry):
        return Outcome("nak", error.delay, str(error))
    if isinstance(error, (Permanent, PayloadError)):
        return Outcome("term", reason=str(error))
    if isinstance(error, asyncio.CancelledError):
        return Outcome("nak", 0.0, "handed back at shutdown")
    return Outcome("nak", backoff(num_delivered), f"{type(error).__name__}: {error}")


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What a handler may know about the message besides its payload."""

    subject: str
    num_delivered: int
    msg: Msg

    async def in_progress(self) -> None:
        await self.msg.in_progress()


Handler = Callable[[Payload, Delivery], Awaitable[None]]


class Consumer:
    def __init__(self, bus: Bus, spec: ConsumerSpec, handler: Handler, *, concurrency: int,
                 logger_name: str, batch: int = 64) -> None:
        self._bus = bus
        self._spec = spec
        self._handler = handler
        self._slots = asyncio.Semaphore(concurrency)
        self._concurrency = concurrency
        self._batch = batch
        self._log = logs.logger(logger_name)
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._loop_task: asyncio.Task[None] | None = None
        self.handled = 0

    async def start(self) -> None:
        js: JetStreamContext = self._bus.js
        self._sub = await js.pull_subscribe_bind(durable=self._spec.durable, stream=self._spec.stream)
        self._loop_task = asyncio.create_task(self._fetch_loop(), name=f"consume-{self._spec.durable}")

    async def stop(self, grace: float) -> None:
        """Stop fetching, let in-flight handlers finish within ``grace``, hand back the rest.

        Safe to call more than once and before :meth:`start`.
        """
        self._stopping.set()
        if self._loop_task is not None:
            self._loop_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._loop_task
            self._loop_task = None
        if self._tasks:
            _, pending = await asyncio.wait(set(self._tasks), timeout=grace)
            for task in pending:
                task.cancel()
            if pending:
                await asyncio.wait(pending)
        with contextlib.suppress(Exception):
            await self._sub.unsubscribe()

    async def _fetch_loop(self) -> None:
        while not self._stopping.is_set():
            # Fetch no more than there are free slots, so no message waits in
            # this process while another process sits idle.
            await self._slots.acquire()
            free = 1
            while free < self._batch and not self._slots.locked():
                await self._slots.acquire()
                free += 1
            try:
                msgs = await self._sub.fetch(batch=free, timeout=1.0)
            except (nats.errors.TimeoutError, TimeoutError):
                msgs = []
            except nats.errors.ConnectionClosedError:
                for _ in range(free):
                    self._slots.release()
                return
            except Exception as exc:
                self._log.warning("fetch failed: %s", exc)
                msgs = []
                await asyncio.sleep(0.5)
            for _ in range(free - len(msgs)):
                self._slots.release()
            for msg in msgs:
                task = asyncio.create_task(self._handle(msg))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def _handle(self, msg: Msg) -> None:
        started = time.monotonic()
        meta = msg.metadata
        num_delivered = meta.num_delivered or 1
        parent = propagation.extract(msg.headers)
        error: BaseException | None = None
        kind = "?"
        tracer = self._bus.tracer
        try:
            with tracer.start_as_current_span(f"consume {self._spec.durable}", context=parent,
                                              kind=SpanKind.CONSUMER,
                                              attributes={"messaging.destination": msg.subject,
                                                          "messaging.delivery": num_delivered}) as span:
                heartbeat = asyncio.create_task(self._heartbeat(msg))
                try:
                    payload = decode(msg.data)
                    kind = payload.kind
                    span.update_name(f"consume {kind}")
                    await self._handler(payload, Delivery(msg.subject, num_delivered, msg))
                except asyncio.CancelledError as exc:
                    error = exc
                except Exception as exc:
                    error = exc
                    if not isinstance(exc, (Retry, Permanent, PayloadError)):
                        span.record_exception(exc)
                        span.set_status(trace.StatusCode.ERROR)
                finally:
                    heartbeat.cancel()
                outcome = outcome_for(error, num_delivered)
                await self._settle(msg, outcome)
        finally:
            self._slots.release()
            self.handled += 1
        elapsed = time.monotonic() - started
        line = f"{elapsed:6.3f}s {outcome.action} {kind} {msg.subject}"
        extra = {"seconds": round(elapsed, 4), "outcome": outcome.action, "kind": kind,
                 "delivery": num_delivered}
        if outcome.reason:
            extra["reason"] = outcome.reason
        if error is not None and not isinstance(error, (Retry, Permanent, PayloadError,
                                                         asyncio.CancelledError)):
            self._log.error(line, extra=extra, exc_info=error)
        else:
            self._log.info(line, extra=extra)
        if isinstance(error, asyncio.CancelledError):
            raise error

    async def _settle(self, msg: Msg, outcome: Outcome) -> None:
        try:
            if outcome.action == "ack":
                await msg.ack()
            elif outcome.action == "term":
                await msg.term()
            else:
                await msg.nak(delay=outcome.delay or None)
        except Exception as exc:
            # The server redelivers after ack_wait; handlers are idempotent.
            self._log.warning("could not %s message on %s: %s", outcome.action, msg.subject, exc)

    async def _heartbeat(self, msg: Msg) -> None:
        interval = max(self._spec.ack_wait_seconds / 3, 0.5)
        while True:
            await asyncio.sleep(interval)
            with contextlib.suppress(Exception):
                await msg.in_progress()
