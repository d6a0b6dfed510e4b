"""Loops a service runs beside its consumer for as long as it runs: sweeps, beats, outboxes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from libs import dependencies


@contextlib.asynccontextmanager
async def running(loop: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> AsyncIterator[None]:
    """``loop`` as a task for the length of the block; cancelled and awaited on the way out."""
    task = asyncio.create_task(loop(), name=name)
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def every(seconds: float, one_round: Callable[[], Awaitable[object]], *, name: str,
          log: logging.Logger) -> contextlib.AbstractAsyncContextManager[None]:
    """``one_round`` every ``seconds`` for the length of the block; a failed round is logged, never fatal."""
    async def loop() -> None:
        while True:
            await asyncio.sleep(seconds)
            try:
                await one_round()
            except Exception as exc:  # the next round tries again
                if (down := dependencies.down_in(exc)) is not None:
                    # Expected while a server restarts: one line, not a traceback every round.
                    log.warning("%s failed: %s is down: %s", name, down, exc)
                else:
                    log.exception("%s failed", name)
    return running(loop, name=name)


def draining(one_batch: Callable[[], Awaitable[int]], batch: int, wake: asyncio.Event, poll_seconds: float, *,
             name: str, log: logging.Logger) -> contextlib.AbstractAsyncContextManager[None]:
    """An outbox's loop: ``one_batch`` again while it takes a full ``batch``, then a wait until
    ``wake`` is set or ``poll_seconds`` pass (so a missed wake costs a delay, never the work).

    A failed round is logged, never fatal: the next one tries again.
    """
    async def loop() -> None:
        while True:
            try:
                while await one_batch() == batch:
                    pass
            except Exception:
                log.exception("%s failed", name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wake.wait(), poll_seconds)
            wake.clear()
    return running(loop, name=name)
