"""Wake-ups for event streams: which stacks just committed events, as PostgreSQL notifies them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class EventFeed:
    """Wakes the streams of a stack when its events are committed."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def notified(self, _conn: object, _pid: int, _channel: str, stack_id: object) -> None:
        for waiter in self._waiters.get(str(stack_id), ()):
            waiter.set()

    @contextlib.contextmanager
    def watch(self, stack_id: str) -> Iterator[asyncio.Event]:
        waiter = asyncio.Event()
        self._waiters.setdefault(stack_id, set()).add(waiter)
        try:
            yield waiter
        finally:
            self._waiters[stack_id].discard(waiter)
            if not self._waiters[stack_id]:
                del self._waiters[stack_id]
