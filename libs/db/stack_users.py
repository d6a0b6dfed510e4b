"""``stack_users``: the credentials of resources whose agents call the API (see libs.resources.stack_user).

A credential counts only while its resource row stands and is not deleted: a row removed
takes it (and the tokens issued for it) by cascade; a row DELETE_COMPLETE, kept while it
waits at a post-delete hook, or a stack deleted, no longer authenticates.
"""

from __future__ import annotations

import dataclasses
import uuid

from libs.db import Conn
from libs.resources.stack_user import StackUserGrant


@dataclasses.dataclass(frozen=True)
class StackUserRow:
    id: str
    project_id: str
    stack_id: uuid.UUID
    stack_name: str
    resource_id: int
    resource_name: str
    # The resource's physical id now: a server's, whose deployments its agent reads.
    physical_id: str | None
    secret_hash: str


_LIVE = (
    "SELECT u.id, u.project_id, u.stack_id, s.name AS stack_name, u.resource_id, u.resource_name,"
    " r.physical_id, u.secret_hash FROM stack_users u"
    " JOIN resources r ON r.id = u.resource_id JOIN stacks s ON s.id = u.stack_id"
    " WHERE NOT (r.action = 'DELETE' AND r.status = 'COMPLETE')"
    " AND NOT (s.action = 'DELETE' AND s.status = 'COMPLETE')")


async def put(conn: Conn, grant: StackUserGrant, *, project_id: str, stack_id: uuid.UUID, resource_id: int,
              resource_name: str) -> None:
    """Store the credential of a resource row; a step run again with a new secret replaces the hash
    (the data recording that secret is written in the same transaction)."""
    await conn.execute(
        "INSERT INTO stack_users (id, project_id, stack_id, resource_id, resource_name, secret_hash)"
        " VALUES ($1, $2, $3, $4, $5, $6)"
        " ON CONFLICT (id) DO UPDATE SET secret_hash = EXCLUDED.secret_hash"
        " WHERE stack_users.resource_id = EXCLUDED.resource_id",
        grant.id, project_id, stack_id, resource_id, resource_name, grant.secret_hash)


async def live(conn: Conn, user_id: str) -> StackUserRow | None:
    row = await conn.fetchrow(f"{_LIVE} AND u.id = $1", user_id)
    return StackUserRow(**dict(row)) if row else None


async def of_resource(conn: Conn, stack_id: uuid.UUID, resource_name: str) -> list[StackUserRow]:
    """The live credentials of a resource by name (a replacement's two rows may both hold one)."""
    rows = await conn.fetch(f"{_LIVE} AND u.stack_id = $1 AND u.resource_name = $2", stack_id, resource_name)
    return [StackUserRow(**dict(r)) for r in rows]
