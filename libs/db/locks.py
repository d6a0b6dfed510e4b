"""Advisory lock keys: one 64-bit key per stack (planner) and per resource row (worker).

asyncpg's pool runs ``pg_advisory_unlock_all()`` when a connection goes back,
so a session lock taken on a borrowed connection lives exactly as long as the
``async with pool.acquire()`` around it: a step holds its resource's lock for
that step only, and a crashed worker's locks die with its session.
"""

from __future__ import annotations

import hashlib
import uuid

from libs.db import Conn


def stack_key(stack_id: uuid.UUID) -> int:
    return int.from_bytes(hashlib.blake2b(b"stack:" + stack_id.bytes, digest_size=8).digest(), "big",
                          signed=True)


def resource_key(resource_id: int) -> int:
    # Resource ids are bigserial, positive and below 2**62: negate to keep them
    # apart from the hashed stack keys' half... both halves can collide only by hash.
    return -resource_id - 1


async def lock_stack_for_transaction(conn: Conn, stack_id: uuid.UUID) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock($1)", stack_key(stack_id))


async def try_lock_resource(conn: Conn, resource_id: int) -> bool:
    return bool(await conn.fetchval("SELECT pg_try_advisory_lock($1)", resource_key(resource_id)))


async def unlock_resource(conn: Conn, resource_id: int) -> None:
    await conn.execute("SELECT pg_advisory_unlock($1)", resource_key(resource_id))
