"""The pull loop over a durable JetStream consumer.

The handler's result decides the message's fate, here and nowhere else:

=======================================  =======================================
handler                                  JetStream outcome
=======================================  =======================================
returns                                  ``ack``
raises ``Retry(delay)`` / ``Conflict``   ``nak(delay)``: run again later
raises ``Permanent`` / bad payload       ``term``: never redeliver
cancelled by shutdown                    ``nak(0)``: another process takes it
the database or NATS failing             ``nak(backoff)``, however often
raises anything else                     ``nak(backoff)``, logged with its traceback;
                                         the ``GIVE_UP_AFTER``-th time: give up
=======================================  =======================================

Giving up calls the handler's ``give_up`` with the error (the worker fails the
resource, the planner the stack, each with the error as the reason) and acks;
should that fail too, the message is tried again later. A consumer without one
terminates the message. Either way the message is handed to ``dead_letter``
(set aside with its reason, where an operator finds it), as is one no handler
can read.

Failures are counted per message (its stream sequence) in this process, not by
JetStream's delivery count: a step that waits is redelivered many times without
failing once. With several processes, a message fails at most
``GIVE_UP_AFTER`` times in each before one of them gives up.

While a handler runs, the consumer sends ``in_progress`` so the server does not
redeliver a long step to someone else.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable
from typing import Final, Literal

import nats.errors
import nats.js.errors
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from libs.errors import GIVE_UP_AFTER, Permanent, Retry, describe, is_transient
from libs.messaging.bus import Bus
from libs.messaging.payloads import Decoder, Payload, PayloadError, decode
from libs.messaging.subjects import ConsumerSpec
from libs.telemetry import logs, propagation

Action = Literal["ack", "nak", "term", "give_up"]
# Messages whose failures a process remembers at once; the oldest are forgotten first.
_REMEMBERED_FAILURES: Final = 10_000


@dataclasses.dataclass(frozen=True)
class Outcome:
    action: Action
    delay: float = 0.0
    reason: str = ""


# The longest wait between tries while PostgreSQL or NATS is away.
OUTAGE_RETRY_SECONDS = 2.0
# Fetches unanswered this long: is the consumer still there? (see _fetch_loop)
_LOOK_AFTER_IDLE_SECONDS = 5.0


def backoff(failures: int) -> float:
    """Delay after an unexpected error: 0.5 s doubling per failure, at most a minute."""
    return float(min(0.5 * 2 ** max(failures - 1, 0), 60.0))


def counts_as_failure(error: BaseException | None) -> bool:
    """Whether ``error`` counts towards giving up on its message (waits and shutdowns do not)."""
    return error is not None and not isinstance(
        error, (Retry, Permanent, PayloadError, asyncio.CancelledError))


def outcome_for(error: BaseException | None, failures: int) -> Outcome:
    """The one mapping from a handler's result to a JetStream outcome.

    ``failures``: how often this message's handler has failed, this time included.
    """
    if error is None:
        return Outcome("ack")
    if isinstance(error, Retry):
        return Outcome("nak", error.delay, str(error))
    if isinstance(error, (Permanent, PayloadError)):
        return Outcome("term", reason=str(error))
    if isinstance(error, asyncio.CancelledError):
        return Outcome("nak", 0.0, "handed back at shutdown")
    if is_transient(error):
        # Waited out, but checked often: once the server is back the work resumes within
        # seconds, not after the minute a long outage would have grown the delay to.
        return Outcome("nak", min(backoff(failures), OUTAGE_RETRY_SECONDS), describe(error))
    if failures >= GIVE_UP_AFTER:
        return Outcome("give_up", reason=f"failed {failures} times: {describe(error)}")
    return Outcome("nak", backoff(failures), describe(error))


@dataclasses.dataclass(frozen=True)
class Delivery:
    """What a handler may know about the message besides its payload."""

    subject: str
    num_delivered: int
    msg: Msg

    async def in_progress(self) -> None:
        await self.msg.in_progress()


Handler = Callable[[Payload, Delivery], Awaitable[None]]
# What a handler does with a message it will never manage: fail what it was for, with the error.
GiveUp = Callable[[Payload, BaseException], Awaitable[None]]


@dataclasses.dataclass(frozen=True)
class SetAside:
    """A message the consumer will never handle: what it was, and why."""

    durable: str
    subject: str
    data: bytes
    payload: Payload | None
    reason: str
    # Whether the handler's give_up failed what the message was for (its owner has an event saying so).
    owner_told: bool


# Where set-aside messages go (a dead-letter row); it must not raise.
DeadLetter = Callable[[SetAside], Awaitable[None]]


class Consumer:
    def __init__(self, bus: Bus, spec: ConsumerSpec, handler: Handler, *, concurrency: int,
                 logger_name: str, batch: int = 64, give_up: GiveUp | None = None,
                 dead_letter: DeadLetter | None = None, decoder: Decoder = decode) -> None:
        self._bus = bus
        self._decode = decoder
        self._spec = spec
        self._handler = handler
        self._give_up = give_up
        self._dead_letter = dead_letter
        # Stream sequence -> how often its handler failed here (see the module's docstring).
        self._failures: collections.OrderedDict[int, int] = collections.OrderedDict()
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
        idle_since = time.monotonic()
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
                idle_since = time.monotonic()
            except (nats.errors.TimeoutError, TimeoutError):
                msgs = []
                # A nats-server before 2.10 answers a fetch of a deleted consumer with silence, not
                # "no responders": a consumer idle that long is looked up (one call), and made again.
                if time.monotonic() - idle_since >= _LOOK_AFTER_IDLE_SECONDS:
                    idle_since = time.monotonic()
                    await self._recreate_if_gone()
            except nats.errors.ConnectionClosedError:
                for _ in range(free):
                    self._slots.release()
                return
            except nats.js.errors.ServiceUnavailableError:
                msgs = []
                await self._recreate_if_gone()
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

    async def _recreate_if_gone(self) -> None:
        """Nobody answers this consumer's fetches: JetStream is still starting, or the consumer is
        gone (a server back without its store). Create it again then, so that fetching resumes."""
        try:
            await self._bus.js.consumer_info(self._spec.stream, self._spec.durable)
        except nats.js.errors.NotFoundError:
            self._log.warning("consumer %s is gone; creating it again", self._spec.durable)
            with contextlib.suppress(Exception):  # the next fetch tells whether it worked
                await self._bus.ensure_topology(attempts_seconds=5.0)
        except Exception as exc:
            self._log.warning("fetch unanswered; JetStream unavailable: %s", exc)
        await asyncio.sleep(0.5)

    async def _handle(self, msg: Msg) -> None:
        started = time.monotonic()
        meta = msg.metadata
        num_delivered = meta.num_delivered or 1
        sequence = meta.sequence.stream
        payload: Payload | None = None
        parent = propagation.extract(msg.headers)
        error: BaseException | None = None
        kind = "?"
        tracer = self._bus.tracer
        try:
            # The message's own trace and ids, on its span and on every line logged for it.
            with (tracer.start_as_current_span(f"consume {self._spec.durable}", context=parent,
                                               kind=SpanKind.CONSUMER,
                                               attributes={"messaging.destination": msg.subject,
                                                           "messaging.delivery": num_delivered}) as span,
                  contextlib.ExitStack() as about):
                heartbeat = asyncio.create_task(self._heartbeat(msg))
                try:
                    payload = self._decode(msg.data)
                    kind = payload.kind
                    span.update_name(f"consume {kind}")
                    ids = {k: v for k, v in payload.log_ids().items() if v}
                    span.set_attributes({f"ember.{k}": v for k, v in ids.items()})
                    about.enter_context(logs.log_context(**ids))
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
                outcome = outcome_for(error, self._count(sequence, error))
                if outcome.action == "give_up":
                    assert error is not None
                    outcome = await self._giving_up(payload, error, outcome)
                    if outcome.action != "nak":
                        await self._set_aside(msg, payload, outcome.reason,
                                              owner_told=outcome.action == "ack")
                elif isinstance(error, PayloadError):
                    await self._set_aside(msg, None, outcome.reason, owner_told=False)
                if outcome.action != "nak":
                    self._failures.pop(sequence, None)
                await self._settle(msg, outcome)
                self._report(msg, kind, num_delivered, outcome, error, elapsed=time.monotonic() - started)
        finally:
            self._slots.release()
            self.handled += 1
        if isinstance(error, asyncio.CancelledError):
            raise error

    def _report(self, msg: Msg, kind: str, num_delivered: int, outcome: Outcome, error: BaseException | None,
                *, elapsed: float) -> None:
        line = f"{elapsed:6.3f}s {outcome.action} {kind} {msg.subject}"
        extra: dict[str, object] = {"seconds": round(elapsed, 4), "outcome": outcome.action, "kind": kind,
                                    "delivery": num_delivered}
        if outcome.reason:
            extra["reason"] = outcome.reason
        if error is not None and not isinstance(error, (Retry, Permanent, PayloadError,
                                                         asyncio.CancelledError)):
            self._log.error(line, extra=extra, exc_info=error)
        else:
            self._log.info(line, extra=extra)

    def _count(self, sequence: int, error: BaseException | None) -> int:
        """This message's failures so far, ``error`` included (forgotten once it is settled for good)."""
        if not counts_as_failure(error):
            return self._failures.get(sequence, 0)
        failures = self._failures.pop(sequence, 0) + 1
        self._failures[sequence] = failures
        while len(self._failures) > _REMEMBERED_FAILURES:
            self._failures.popitem(last=False)
        return failures

    async def _giving_up(self, payload: Payload | None, error: BaseException, outcome: Outcome) -> Outcome:
        """Let the handler fail what the message was for; ack once it has, else try again later."""
        self._log.error("giving up on a message: %s", outcome.reason)
        if self._give_up is None or payload is None:
            return Outcome("term", reason=outcome.reason)
        try:
            await self._give_up(payload, error)
        except Exception as exc:
            self._log.warning("could not give up on a message yet: %s", describe(exc))
            return Outcome("nak", backoff(GIVE_UP_AFTER), outcome.reason)
        return Outcome("ack", reason=outcome.reason)

    async def _set_aside(self, msg: Msg, payload: Payload | None, reason: str, *, owner_told: bool) -> None:
        if self._dead_letter is not None:
            await self._dead_letter(SetAside(self._spec.durable, msg.subject, msg.data, payload, reason,
                                             owner_told))

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
