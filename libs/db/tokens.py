"""``auth_tokens``: tokens the api's Identity endpoint issued, by the SHA-256 of the token."""

from __future__ import annotations

import dataclasses
import datetime
import hashlib

from libs.db import Conn


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


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def insert(conn: Conn, token: str, row: TokenRow) -> None:
    await conn.execute(
        "INSERT INTO auth_tokens (token_hash, user_id, user_name, project_id, project_name, roles,"
        " audit_id, issued_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        digest(token), row.user_id, row.user_name, row.project_id, row.project_name, row.roles,
        row.audit_id, row.issued_at, row.expires_at)
    # Expired tokens are of no use to anyone; each issue sweeps a few.
    await conn.execute("DELETE FROM auth_tokens WHERE token_hash IN (SELECT token_hash FROM auth_tokens"
                       " WHERE expires_at < now() - interval '1 day' LIMIT 100)")


async def live(conn: Conn, token: str) -> TokenRow | None:
    """The token's row if it is neither expired nor revoked."""
    row = await conn.fetchrow(
        "SELECT user_id, user_name, project_id, project_name, roles, audit_id, issued_at, expires_at"
        " FROM auth_tokens WHERE token_hash = $1 AND NOT revoked AND expires_at > now()", digest(token))
    return TokenRow(**dict(row)) if row else None


async def revoke(conn: Conn, token: str) -> bool:
    result = await conn.execute("UPDATE auth_tokens SET revoked = true WHERE token_hash = $1 AND NOT revoked",
                                digest(token))
    return result.endswith(" 1")
