"""A ``LISTEN`` that outlives PostgreSQL restarts.

It holds a connection of its own (a pooled one would go back to the pool and
stop listening). When the server drops it, a new one is opened, with a growing
delay while the server is down. Notifications sent while nobody listened are
lost, so once listening again it calls ``on_resume``: the caller looks for
itself, as after any missed wake-up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import asyncpg

from libs import background
from libs.telemetry import logs

log = logs.logger("db")

# Notified with the notification's payload.
OnNotify = Callable[[str], None]
FIRST_RETRY_SECONDS = 0.5
MAX_RETRY_SECONDS = 5.0
# How often a connection is checked besides its termination callback, should the callback not come.
CHECK_SECONDS = 5.0


async def _listen(url: str, channel: str, on_notify: OnNotify, lost: asyncio.Event) -> asyncpg.Connection:
    conn = await asyncpg.connect(url)
    try:
        await conn.add_listener(channel, lambda _c, _pid, _channel, payload: on_notify(payload))
    except BaseException:
        await conn.close()
        raise
    conn.add_termination_listener(lambda _c: lost.set())
    return conn


@contextlib.asynccontextmanager
async def listening(url: str, channel: str, on_notify: OnNotify,
                    on_resume: Callable[[], None]) -> AsyncIterator[None]:
    """``LISTEN channel`` for the length of the block, through any number of server restarts.

    The first connection must succeed (a service does not start without its database).
    """
    lost = asyncio.Event()
    conn = await _listen(url, channel, on_notify, lost)

    async def keep() -> None:
        nonlocal conn
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lost.wait(), CHECK_SECONDS)
            if not (lost.is_set() or conn.is_closed()):
                continue
            log.warning("lost the connection listening on %s; listening again", channel)
            delay = FIRST_RETRY_SECONDS
            while True:
                lost.clear()
                try:
                    conn = await _listen(url, channel, on_notify, lost)
                    break
                except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
                    log.warning("cannot listen on %s yet: %s", channel, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_RETRY_SECONDS)
            log.info("listening on %s again", channel)
            on_resume()

    try:
        async with background.running(keep, name=f"listen {channel}"):
            yield
    finally:
        with contextlib.suppress(Exception):
            await conn.close()
