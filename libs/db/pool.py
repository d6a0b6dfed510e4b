"""The asyncpg pool of one service, with JSON codecs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import asyncpg
import orjson


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, schema="pg_catalog", encoder=lambda v: orjson.dumps(v).decode(),
                                  decoder=orjson.loads, format="text")


@contextlib.asynccontextmanager
async def create_pool(url: str, *, min_size: int = 1, max_size: int = 10,
                      application_name: str = "ember") -> AsyncIterator[asyncpg.Pool]:
    # Each per-resource advisory lock holds a connection for one step, so
    # callers size the pool above their concurrency.
    pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, init=_init_connection,
                                     server_settings={"application_name": application_name})
    try:
        yield pool
    finally:
        await pool.close()
