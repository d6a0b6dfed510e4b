"""The simulated cloud for tests that drive it through the real openstacksdk (which is synchronous).

The simulator runs on its own event loop in a thread, on a database of its own; tests are
plain functions making openstacksdk calls over real HTTP.
"""

from __future__ import annotations

import asyncio
import dataclasses
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

import openstack
from openstack.connection import Connection

from libs.simcloud import server
from libs.simcloud.state import SimSettings
from tests.support import Servers, database_url_for

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class SimCloud:
    url: str
    database_url: str

    def connect(self, user: str = "demo", project: str | None = None) -> Connection:
        return openstack.connect(
            auth_url=f"{self.url}/identity/v3", username=user, password=user, project_name=project or user,
            user_domain_name="Default", project_domain_name="Default", region_name="RegionOne")


async def _admin(url: str, statement: str) -> None:
    import asyncpg
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@dataclasses.dataclass
class _Running:
    url: str
    stop: Callable[[], None]


def _serve(options: server.Options) -> tuple[threading.Thread, _Running]:
    ready: queue.Queue[str | BaseException] = queue.Queue()
    holder: dict[str, asyncio.AbstractEventLoop | asyncio.Event] = {}

    async def main() -> None:
        stop = asyncio.Event()
        holder["loop"], holder["stop"] = asyncio.get_running_loop(), stop
        try:
            async with server.running(options) as url:
                ready.put(url)
                await stop.wait()
        except BaseException as exc:
            ready.put(exc)
            raise

    thread = threading.Thread(target=asyncio.run, args=(main(),), daemon=True)
    thread.start()
    got = ready.get(timeout=60)
    if isinstance(got, BaseException):
        raise got

    def stop() -> None:
        loop, event = holder["loop"], holder["stop"]
        assert isinstance(loop, asyncio.AbstractEventLoop) and isinstance(event, asyncio.Event)
        loop.call_soon_threadsafe(event.set)
        thread.join(30)

    return thread, _Running(got, stop)


def simcloud_running(servers: Servers, settings: SimSettings | None = None) -> Iterator[SimCloud]:
    """A simulator on a fresh database (dropped afterwards)."""
    name = f"ember_sim_{uuid.uuid4().hex[:10]}"
    url = database_url_for(servers.admin_db_url, name)
    options = server.Options(database_url=url, port=0, settings=settings or SimSettings(volume_seconds=0.2))
    _, running = _serve(options)
    try:
        yield SimCloud(running.url, url)
    finally:
        running.stop()
        asyncio.run(_admin(servers.admin_db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def wait_for(probe: Callable[[], T | None], *, timeout: float = 20.0, what: str = "condition") -> T:
    """Poll ``probe`` until it answers something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what} not reached in {timeout} s (last: {last!r})")
