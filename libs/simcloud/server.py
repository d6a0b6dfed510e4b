"""Running the simulator: its schema and seeds, then the HTTP server (``ember simcloud``)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import signal
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import web

from libs.db import migrate as ember_migrate
from libs.db.pool import create_pool
from libs.simcloud import app as sim_app
from libs.simcloud import auth, migrate, seeds
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


async def prepare(state: SimState, credentials: seeds.Credentials) -> None:
    """Schema, seeds (the frame's and each service's ``seed(conn, state)``) and the token key."""
    async with state.pool.acquire() as conn:
        await migrate.migrate(conn)
        await seeds.seed(conn, credentials)
        for module_name in sim_app.SERVICE_MODULES.values():
            module: Any = sim_app._load(module_name)
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
        site = web.TCPSite(runner, options.host, options.port)
        await site.start()
        try:
            sockets = runner.addresses
            port = sockets[0][1] if sockets else options.port
            yield f"http://{options.host}:{port}"
        finally:
            await runner.cleanup()


async def serve(options: Options) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with running(options) as url:
        log.info("simcloud serving on %s (identity: %s/identity)", url, url)
        await stop.wait()
