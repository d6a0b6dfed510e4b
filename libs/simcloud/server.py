"""Running the simulator: its schema and seeds, then the HTTP server (``ember simcloud``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import threading
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from libs.db import migrate as ember_migrate
from libs.db.pool import create_pool
from libs.simcloud import app as sim_app
from libs.simcloud import auth, migrate, seeds
from libs.simcloud.agents import Agents, AgentSettings
from libs.simcloud.state import SimSettings, SimState
from libs.telemetry import logs

log = logs.logger("simcloud")


@dataclasses.dataclass(frozen=True)
class Options:
    database_url: str
    host: str = "127.0.0.1"
    port: int = 8776
    settings: SimSettings = dataclasses.field(default_factory=SimSettings)
    credentials: seeds.Credentials = dataclasses.field(default_factory=seeds.Credentials)
    pool_size: int = 10
    # An `ember agent` per ACTIVE server booted for software config (None: none run).
    agents: AgentSettings | None = None


async def prepare(state: SimState, credentials: seeds.Credentials) -> None:
    """Schema, seeds (the frame's and each service's ``seed(conn, state)``) and the token key."""
    async with state.pool.acquire() as conn:
        await migrate.migrate(conn)
        await seeds.seed(conn, credentials)
        for module_name in sim_app.SERVICE_MODULES.values():
            module: Any = sim_app.load_service(module_name)
            if module is not None and hasattr(module, "seed"):
                await module.seed(conn, state)
        state.token_secret = await auth.load_secret(conn)


@contextlib.asynccontextmanager
async def running(options: Options) -> AsyncIterator[str]:
    """The simulator serving on ``options``' address; yields its base URL (the port chosen if 0)."""
    await ember_migrate.ensure_database(options.database_url)
    async with create_pool(options.database_url, min_size=1, max_size=options.pool_size,
                           application_name="simcloud") as pool:
        state = SimState(pool, options.settings, token_secret=b"")
        await prepare(state, options.credentials)
        runner = web.AppRunner(sim_app.make_app(state), access_log=None)
        await runner.setup()
        # A simulator drains nothing: kept-alive clients must not hold its exit for a minute.
        site = web.TCPSite(runner, options.host, options.port, shutdown_timeout=1.0)
        await site.start()
        stop = asyncio.Event()
        keeper = (asyncio.create_task(Agents(pool, options.agents).run(stop), name="simcloud agents")
                  if options.agents is not None else None)
        try:
            sockets = runner.addresses
            port = sockets[0][1] if sockets else options.port
            yield f"http://{options.host}:{port}"
        finally:
            stop.set()
            if keeper is not None:
                await keeper  # its agents stopped
            await runner.cleanup()


async def serve(options: Options) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def stopping() -> None:
        stop.set()
        # Its database may be gone already (`ember dev` killed as a whole): the clean-up is
        # given a few seconds, then the process goes anyway.
        loop.call_later(5.0, os._exit, 0)

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping)
    async with running(options) as url:
        log.info("simcloud serving on %s (identity: %s/identity)", url, url)
        await stop.wait()


class InThread:
    """The simulator on an event loop of its own thread: for tests and benches that call it synchronously."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.url = ""
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="simcloud", daemon=True)

    def start(self, timeout: float = 60.0) -> str:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("the simulator did not start")
        if self._failure is not None:
            raise RuntimeError("the simulator did not start") from self._failure
        return self.url

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)

    def _run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported to start()'s caller
            self._failure = exc
            self._ready.set()

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with running(self.options) as url:
            self.url = url
            self._ready.set()
            await self._stop.wait()
