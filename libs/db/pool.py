"""The asyncpg pool of one service, with JSON codecs.

The pool outlives a PostgreSQL restart: a connection the server dropped is
replaced on its next acquire. While the server is down, acquiring fails with
:class:`DatabaseUnavailable`, which callers treat as a passing fault.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

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


class DatabaseUnavailable(ConnectionError):
    """No connection to PostgreSQL could be opened: it is down, starting or restarting."""


async def _connect(*args: Any, **kwargs: Any) -> asyncpg.Connection:
    # asyncpg lets the socket's own error through (refused, reset, timed out),
    # which says nothing of what was being reached; this names it.
    try:
        return await asyncpg.connect(*args, **kwargs)
    except OSError as exc:
        raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(name, schema="pg_catalog", encoder=lambda v: orjson.dumps(v).decode(),
                                  decoder=orjson.loads, format="text")


@contextlib.asynccontextmanager
async def create_pool(url: str, *, min_size: int = 1, max_size: int = 10,
                      application_name: str = "ember") -> AsyncIterator[asyncpg.Pool]:
    # Each per-resource advisory lock holds a connection for one step, so
    # callers size the pool above their concurrency.
    pool = await asyncpg.create_pool(url, min_size=min_size, max_size=max_size, connect=_connect,
                                     init=_init_connection,
                                     server_settings={"application_name": application_name})
    try:
        yield pool
    finally:
        await pool.close()
