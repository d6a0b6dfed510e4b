"""Group commit for handlers: items submitted together are run as one batch.

Each consumer task submits its item and waits for its own result. A batch
starts on the next turn of the event loop after the first submission, so every
message of one fetch lands in the same batch; while ``parallel`` batches run,
new items queue and form the next one. The busier the worker, the larger its
batches, and one idle message still runs at once.

A batch runs in a context of its own, not in its first submitter's: whatever
a submitter set in context variables (its trace, its log ids) is its own, and
what belongs to an item travels with the item.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")


class Coalescer(Generic[T, R]):
    def __init__(self, run: Callable[[list[T]], Awaitable[list[R]]], *, size: int, parallel: int = 2
                 ) -> None:
        self._run = run
        self._size = size
        self._parallel = parallel
        self._pending: list[tuple[T, asyncio.Future[R]]] = []
        self._running = 0
        self._scheduled = False
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(self, item: T) -> R:
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._kick)
        return await future

    def _kick(self) -> None:
        self._scheduled = False
        while self._pending and self._running < self._parallel:
            batch, self._pending = self._pending[:self._size], self._pending[self._size:]
            batch = [(item, fut) for item, fut in batch if not fut.cancelled()]
            if not batch:
                continue
            self._running += 1
            task = asyncio.create_task(self._one(batch), context=contextvars.Context())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _one(self, batch: list[tuple[T, asyncio.Future[R]]]) -> None:
        try:
            results = await self._run([item for item, _ in batch])
        except BaseException as exc:  # every waiter learns it; cancellation included
            for _, future in batch:
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else asyncio.CancelledError())
            if not isinstance(exc, Exception):
                raise
        else:
            for (_, future), result in zip(batch, results, strict=True):
                if not future.done():
                    future.set_result(result)
        finally:
            self._running -= 1
            if self._pending:
                self._kick()
