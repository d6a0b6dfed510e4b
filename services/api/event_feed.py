"""Wake-ups for event streams: which stacks just committed events, as PostgreSQL notifies them."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator


class EventFeed:
    """Wakes the streams of a stack when its events are committed."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = {}

    def notified(self, stack_id: str) -> None:
        for waiter in self._waiters.get(stack_id, ()):
            waiter.set()

    def wake_all(self) -> None:
        """Every stream looks for new events: notifications may have been missed."""
        for waiters in self._waiters.values():
            for waiter in waiters:
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
