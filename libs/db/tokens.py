"""``auth_tokens``: tokens the api's Identity endpoint issued, by the SHA-256 of the token."""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Sequence

from libs.db import Conn
from libs.resources.stack_user import digest  # a leaked table must not hand out live tokens

_COLUMNS = ("user_id, user_name, project_id, project_name, roles, audit_id, issued_at, expires_at,"
            " stack_user_id")


@dataclasses.dataclass(frozen=True)
class TokenRow:
    user_id: str
    user_name: str
    project_id: str
    project_name: str
    roles: list[str]
    audit_id: str
    issued_at: datetime.datetime
    expires_at: datetime.datetime
    # A stack user's token (its user is that credential): it goes when the credential goes.
    stack_user_id: str | None = None


async def insert(conn: Conn, token: str, *, user_id: str, user_name: str, project_id: str,
                 project_name: str, roles: Sequence[str], audit_id: str, ttl_seconds: int,
                 not_after: datetime.datetime | None = None, stack_user_id: str | None = None) -> TokenRow:
    """Store a new token living ``ttl_seconds`` but never past ``not_after``.

    The database's clock sets issue and expiry, as it alone judges expiry: api
    processes on machines with skewed clocks still agree.
    """
    row = await conn.fetchrow(
        "INSERT INTO auth_tokens (token_hash, user_id, user_name, project_id, project_name, roles,"
        " audit_id, issued_at, expires_at, stack_user_id) VALUES ($1, $2, $3, $4, $5, $6, $7, now(),"
        f" LEAST(now() + $8::integer * interval '1 second', $9::timestamptz), $10) RETURNING {_COLUMNS}",
        digest(token), user_id, user_name, project_id, project_name, list(roles), audit_id, ttl_seconds,
        not_after, stack_user_id)
    assert row is not None
    # Expired tokens are of no use to anyone; each issue sweeps a few, so no job is needed.
    await conn.execute("DELETE FROM auth_tokens WHERE token_hash IN (SELECT token_hash FROM auth_tokens"
                       " WHERE expires_at < now() - interval '1 day' LIMIT 100)")
    return TokenRow(**dict(row))


async def live(conn: Conn, token: str) -> TokenRow | None:
    """The token's row if it is neither expired nor revoked."""
    if not token:
        return None
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM auth_tokens"
        " WHERE token_hash = $1 AND NOT revoked AND expires_at > now()", digest(token))
    return TokenRow(**dict(row)) if row else None


async def revoke(conn: Conn, token: str) -> bool:
    """Revoke a live token; False if it was unknown, expired or already revoked."""
    result = await conn.execute(
        "UPDATE auth_tokens SET revoked = true WHERE token_hash = $1 AND NOT revoked AND expires_at > now()",
        digest(token))
    return result == "UPDATE 1"
