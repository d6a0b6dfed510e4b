"""The body of a service whose work arrives on one durable consumer, and where its dead letters go."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from libs.db import dead_letters
from libs.errors import describe
from libs.messaging.consumer import Consumer, DeadLetter, Handler, SetAside
from libs.messaging.dispatch import Dispatch
from libs.messaging.max_deliveries import watching
from libs.messaging.payloads import Decoder, decode
from libs.messaging.subjects import ConsumerSpec
from libs.runtime import Runtime
from libs.telemetry import logs


def consuming(spec_of: Callable[[Runtime], ConsumerSpec], handler_of: Callable[[Runtime], Handler],
              *, concurrency_of: Callable[[Runtime], int] = lambda rt: rt.settings.worker_concurrency,
              decoder: Decoder = decode) -> Callable[[Runtime], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def body(rt: Runtime) -> AsyncIterator[None]:
        handler = handler_of(rt)
        spec = spec_of(rt)
        give_up = handler.give_up if isinstance(handler, Dispatch) else None
        sink = dead_letter_sink(rt, stack_events=True)
        consumer = Consumer(rt.bus, spec, handler, concurrency=concurrency_of(rt), logger_name=rt.service,
                            give_up=give_up, dead_letter=sink, decoder=decoder)
        async with watching(rt.bus, spec, give_up=give_up, dead_letter=sink, logger_name=rt.service,
                            decoder=decoder):
            await consumer.start()
            try:
                yield
            finally:
                await consumer.stop(rt.settings.shutdown_grace)

    return body


def dead_letter_sink(rt: Runtime, *, stack_events: bool) -> DeadLetter:
    """Record what a consumer sets aside: a ``dead_letters`` row and one log line, and an event on
    the message's stack unless its handler already failed something there with the reason.

    ``stack_events=False`` for consumers of notices: an event about a notice set aside would make
    another notice, which the same fault could set aside again.
    """
    log = logs.logger(rt.service)

    async def sink(aside: SetAside) -> None:
        stack = aside.payload.log_ids().get("stack_id") if aside.payload is not None else None
        try:
            stack_id = uuid.UUID(stack) if stack else None
        except ValueError:
            stack_id = None
        msg_id = getattr(aside.payload, "msg_id", None)
        try:
            async with rt.pool.acquire() as conn, conn.transaction():
                letter = await dead_letters.add(
                    conn, source=aside.durable, subject=aside.subject, msg_id=msg_id, stack_id=stack_id,
                    reason=aside.reason, payload=aside.data,
                    stack_event=stack_events and not aside.owner_told)
        except Exception as exc:  # the log line below is then the only record
            log.error("dead letter not recorded: %s", describe(exc))
            letter = 0
        log.error("dead letter %s: %s set aside: %s", letter, aside.durable, aside.reason,
                  extra={"dead_letter": letter, "subject": aside.subject})

    return sink
