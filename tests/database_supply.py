"""Each test's database, made ahead and dropped behind, on a thread of its own.

``CREATE DATABASE ... TEMPLATE`` and ``DROP DATABASE`` take a few tenths of a second
each, over some 500 tests; most tests spend their time waiting (for a stack to
settle, a process to start), so the next test's database is made, and the last
one's dropped, while they wait, rather than between them. The same thread
deletes the JetStream streams a test's prefix made.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import uuid
from collections.abc import Awaitable

import asyncpg
import nats

# Databases kept made ahead: one for the next test, one more for a test that follows at once.
AHEAD = 2


class DatabaseSupply:
    """Databases cloned from ``template``, handed out one per test, dropped after it."""

    def __init__(self, admin_url: str, template: str, prefix: str) -> None:
        self._admin_url = admin_url
        self._template = template
        self._prefix = prefix
        self._ready: queue.Queue[str | BaseException] = queue.Queue()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="database-supply", daemon=True)
        self._thread.start()
        self._pending: list[concurrent.futures.Future[None]] = []
        for _ in range(AHEAD):
            self._make_one()

    def take(self, timeout: float = 120.0) -> str:
        """A database of the test's own (blocking until one is made); one more is started."""
        got = self._ready.get(timeout=timeout)
        self._make_one()
        if isinstance(got, BaseException):
            raise got
        return got

    def drop_later(self, name: str) -> None:
        self._run(self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def delete_streams_later(self, nats_url: str, prefix: str) -> None:
        self._run(drop_streams(nats_url, prefix))

    def close(self) -> None:
        """Wait for what is under way, drop what was made and not taken, stop the thread."""
        for future in self._pending:
            future.exception()  # wait; a failed clean-up of one test does not fail the run
        while not self._ready.empty():
            got = self._ready.get_nowait()
            if isinstance(got, str):
                asyncio.run_coroutine_threadsafe(self._admin(
                    f'DROP DATABASE IF EXISTS "{got}" WITH (FORCE)'), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    def _make_one(self) -> None:
        name = f"{self._prefix}_{uuid.uuid4().hex[:8]}"

        async def make() -> None:
            try:
                await self._admin(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"')
                self._ready.put(name)
            except BaseException as exc:  # the test that takes it fails with this
                self._ready.put(exc)
        self._run(make())

    def _run(self, work: Awaitable[None]) -> None:
        async def wrapped() -> None:
            await work
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(asyncio.run_coroutine_threadsafe(wrapped(), self._loop))

    async def _admin(self, statement: str) -> None:
        conn = await asyncpg.connect(self._admin_url)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()


async def drop_streams(nats_url: str, prefix: str) -> None:
    """Delete the JetStream streams a run made under ``prefix`` (a shared server keeps them)."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        for stream in await js.streams_info():
            if stream.config.name and stream.config.name.startswith(prefix.upper() + "_"):
                await js.delete_stream(stream.config.name)
    finally:
        await nc.close()
