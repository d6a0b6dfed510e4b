"""The asyncpg pool of one service, with JSON codecs."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import asyncpg
import orjson

from libs.db import Conn


class Connections(Protocol):
    """Where an operation gets its connections: a pool, or one connection already held."""

    def acquire(self) -> AbstractAsyncContextManager[Conn]: ...


class Held:
    """One connection lent out as if it were a pool.

    A worker's step already holds a connection (its resource lock); an
    operation it starts on a nested stack runs on that same connection rather
    than waiting for a second one, which a busy pool might never give.
    """

    def __init__(self, conn: Conn) -> None:
        self._conn = conn

    @contextlib.asynccontextmanager
    async def acquire(self) -> AsyncIterator[Conn]:
        yield self._conn


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
