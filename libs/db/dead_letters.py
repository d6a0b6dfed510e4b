"""``dead_letters``: messages set aside because they can never be delivered or handled.

An outbox or consumer that retried such a message would retry it for ever and
hold up everything behind it (issue 14: one 11.7 MB event stopped every
project's notices). Setting one aside records it here, writes an event on its
stack (so the stack's owner sees it in the event list) and logs one line.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Final

from libs.db import Conn, events

# A message kept whole up to this size, to read or replay; a larger one keeps its size only.
KEEP_BYTES: Final = 1 << 20


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    id: int
    source: str
    subject: str
    msg_id: str | None
    stack_id: uuid.UUID | None
    reason: str
    size: int
    payload: bytes | None
    created_at: datetime.datetime
    replayed_at: datetime.datetime | None


_COLUMNS = "id, source, subject, msg_id, stack_id, reason, size, payload, created_at, replayed_at"


async def add(conn: Conn, *, source: str, subject: str, msg_id: str | None, stack_id: uuid.UUID | None,
              reason: str, payload: bytes, stack_event: bool = True) -> int:
    """Record a message set aside and, when it is a stack's, an event on that stack; the row's id."""
    letter_id = await conn.fetchval(
        "INSERT INTO dead_letters (source, subject, msg_id, stack_id, reason, size, payload)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id", source, subject, msg_id, stack_id,
        reason[:4000], len(payload), payload if len(payload) <= KEEP_BYTES else None)
    assert isinstance(letter_id, int)
    if stack_id is not None and stack_event:
        await _stack_event(conn, stack_id, f"Message set aside (dead letter {letter_id}): {reason}")
    return letter_id


async def _stack_event(conn: Conn, stack_id: uuid.UUID, reason: str) -> None:
    """An event on the stack in its current state: what a user listing its events sees."""
    row = await conn.fetchrow("SELECT name, action, status FROM stacks WHERE id = $1", stack_id)
    if row is None:
        return
    await events.add(conn, stack_id=stack_id, resource_name=row["name"], physical_resource_id=str(stack_id),
                     resource_type="OS::Heat::Stack", action=row["action"], status=row["status"],
                     reason=reason)


async def listing(conn: Conn, *, limit: int = 100, include_replayed: bool = False) -> list[DeadLetter]:
    rows = await conn.fetch(f"SELECT {_COLUMNS} FROM dead_letters WHERE $2 OR replayed_at IS NULL"
                            " ORDER BY id DESC LIMIT $1", limit, include_replayed)
    return [DeadLetter(**dict(r)) for r in rows]


async def get(conn: Conn, letter_id: int) -> DeadLetter | None:
    row = await conn.fetchrow(f"SELECT {_COLUMNS} FROM dead_letters WHERE id = $1", letter_id)
    return DeadLetter(**dict(row)) if row else None


async def replayed(conn: Conn, letter_id: int) -> None:
    await conn.execute("UPDATE dead_letters SET replayed_at = now() WHERE id = $1", letter_id)
