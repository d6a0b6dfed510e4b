"""Messages JetStream stopped delivering: set aside, and what they were for failed.

A consumer with ``max_deliver`` stops delivering a message after that many
deliveries, and says so only in an advisory; the message would otherwise sit in
its stream for ever (in a work queue, counted as pending) while whatever it was
for waits. A delivery that never settles (its process died, or it outlasted the
ack wait) counts towards that limit but never towards the consumer's own
failure count, so this is how such a message ends: the handler's ``give_up``
fails what it was for with :class:`libs.errors.NeverHandled`, and the message
goes to the consumer's dead letters. One process of the consumer's service
handles each advisory (a queue group).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from nats.aio.msg import Msg

from libs.errors import NeverHandled, describe
from libs.messaging.bus import Bus
from libs.messaging.consumer import DeadLetter, GiveUp, SetAside
from libs.messaging.payloads import Decoder, Payload, PayloadError, decode
from libs.messaging.subjects import ConsumerSpec, Names
from libs.telemetry import logs


@contextlib.asynccontextmanager
async def watching(bus: Bus, spec: ConsumerSpec, *, give_up: GiveUp | None, dead_letter: DeadLetter | None,
                   logger_name: str, decoder: Decoder = decode) -> AsyncIterator[None]:
    """While inside, every message of ``spec`` that reaches ``max_deliver`` is set aside."""
    log = logs.logger(logger_name)
    workqueue = any(s.name == spec.stream and s.retention == "workqueue" for s in bus.names.streams)
    if spec.max_deliver <= 0:
        yield
        return

    async def on_advisory(msg: Msg) -> None:
        try:
            advisory: dict[str, Any] = orjson.loads(msg.data)
            sequence, deliveries = int(advisory["stream_seq"]), int(advisory["deliveries"])
            await _set_aside(sequence, deliveries)
        except Exception as exc:  # a lost advisory leaves the message where it was, as before
            log.error("could not set aside a message past its deliveries: %s", describe(exc))

    async def _set_aside(sequence: int, deliveries: int) -> None:
        stored = await bus.js.get_msg(spec.stream, sequence)
        data = stored.data or b""
        payload: Payload | None
        try:
            payload = decoder(data)
        except PayloadError:
            payload = None
        error = NeverHandled(f"{payload.kind if payload else 'unreadable'} message delivered {deliveries}"
                             " times and never handled")
        told = False
        if give_up is not None and payload is not None:
            await give_up(payload, error)
            told = True
        if dead_letter is not None:
            await dead_letter(SetAside(spec.durable, stored.subject or "", data, payload, str(error), told))
        if workqueue:
            with contextlib.suppress(Exception):  # already gone: nothing holds it
                await bus.js.delete_msg(spec.stream, sequence)

    sub = await bus.nc.subscribe(Names.max_deliveries(spec), queue=spec.durable, cb=on_advisory)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
