"""PostgreSQL: the pool, numbered SQL migrations, one module per table family."""

from typing import TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

# What queries run on: a plain connection, or one borrowed from a pool.
Conn: TypeAlias = asyncpg.Connection | PoolConnectionProxy
