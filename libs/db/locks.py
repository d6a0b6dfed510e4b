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


async def try_lock_resources(conn: Conn, resource_ids: list[int]) -> set[int]:
    """Try each resource's lock, in id order; returns the ids now held by this session."""
    rows = await conn.fetch("SELECT k, pg_try_advisory_lock(-k - 1) AS held FROM unnest($1::bigint[]) AS k"
                            " ORDER BY k", sorted(set(resource_ids)))
    return {r["k"] for r in rows if r["held"]}


async def unlock_resources(conn: Conn, resource_ids: list[int]) -> None:
    if resource_ids:
        await conn.execute("SELECT pg_advisory_unlock(-k - 1) FROM unnest($1::bigint[]) AS k",
                           sorted(resource_ids))
