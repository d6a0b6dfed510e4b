"""The body of a service whose work arrives on one durable consumer."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager

from libs.messaging.consumer import Consumer, Handler
from libs.messaging.dispatch import Dispatch
from libs.messaging.subjects import ConsumerSpec
from libs.runtime import Runtime


def consuming(spec_of: Callable[[Runtime], ConsumerSpec], handler_of: Callable[[Runtime], Handler],
              *, concurrency_of: Callable[[Runtime], int] = lambda rt: rt.settings.worker_concurrency,
              ) -> Callable[[Runtime], AbstractAsyncContextManager[None]]:
    @contextlib.asynccontextmanager
    async def body(rt: Runtime) -> AsyncIterator[None]:
        handler = handler_of(rt)
        consumer = Consumer(rt.bus, spec_of(rt), handler, concurrency=concurrency_of(rt),
                            logger_name=rt.service,
                            give_up=handler.give_up if isinstance(handler, Dispatch) else None)
        await consumer.start()
        try:
            yield
        finally:
            await consumer.stop(rt.settings.shutdown_grace)

    return body
