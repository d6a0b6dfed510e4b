"""Route a decoded payload to the handler registered for its type."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from libs.errors import Permanent
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import Payload

TypedHandler = Callable[[Any, Delivery], Awaitable[None]]
TypedGiveUp = Callable[[Any, BaseException], Awaitable[None]]


class Dispatch:
    def __init__(self, handlers: Mapping[type[Payload], TypedHandler],
                 give_ups: Mapping[type[Payload], TypedGiveUp] | None = None) -> None:
        self._handlers = dict(handlers)
        self._give_ups = dict(give_ups or {})

    async def __call__(self, payload: Payload, delivery: Delivery) -> None:
        handler = self._handlers.get(type(payload))
        if handler is None:
            # Another service's message on this subject, or a newer Ember's:
            # redelivering it here can never succeed.
            raise Permanent(f"no handler for {payload.kind!r} messages on {delivery.subject}")
        await handler(payload, delivery)

    async def give_up(self, payload: Payload, error: BaseException) -> None:
        """The consumer gave up on ``payload``: its type's handler fails what it was for, if it can."""
        give_up = self._give_ups.get(type(payload))
        if give_up is not None:
            await give_up(payload, error)
