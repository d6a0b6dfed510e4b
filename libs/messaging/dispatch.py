"""Route a decoded payload to the handler registered for its type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from libs.errors import Permanent
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import Payload

TypedHandler = Callable[[Any, Delivery], Awaitable[None]]


class Dispatch:
    def __init__(self, handlers: Mapping[type[Payload], TypedHandler]) -> None:
        self._handlers = dict(handlers)

    async def __call__(self, payload: Payload, delivery: Delivery) -> None:
        handler = self._handlers.get(type(payload))
        if handler is None:
            # Another service's message on this subject, or a newer Ember's:
            # redelivering it here can never succeed.
            raise Permanent(f"no handler for {payload.kind!r} messages on {delivery.subject}")
        await handler(payload, delivery)
