"""Numbered SQL migrations, applied at start by whichever process comes first.

Files are ``migrations/NNNN_name.sql``. A transaction-scoped advisory lock
serialises concurrent starters: the second waits, then finds nothing to do.
"""

from __future__ import annotations

import dataclasses
import re
from importlib import resources
from urllib.parse import unquote, urlsplit, urlunsplit

import asyncpg

from libs.db import Conn
from libs.telemetry import logs

log = logs.logger("db")

# pg_advisory_xact_lock key: the ASCII of "embermig" as a 64-bit integer.
_LOCK_KEY = int.from_bytes(b"embermig", "big") - (1 << 63)
_NAME_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


@dataclasses.dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


def available() -> list[Migration]:
    found = []
    for entry in resources.files("libs.db").joinpath("migrations").iterdir():
        match = _NAME_RE.match(entry.name)
        if match:
            found.append(Migration(int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two migrations share a number: {versions}")
    return found


async def migrate(conn: Conn) -> list[int]:
    """Apply what is missing; return the versions applied by this call."""
    applied_now: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        for migration in available():
            if migration.version in done:
                continue
            await conn.execute(migration.sql)
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                               migration.version, migration.name)
            applied_now.append(migration.version)
    if applied_now:
        log.info("applied migrations %s", applied_now)
    return applied_now


async def ensure_database(url: str) -> bool:
    """Create the URL's database if the server lacks it; True when this call created it."""
    try:
        conn = await asyncpg.connect(url)
    except asyncpg.InvalidCatalogNameError:
        pass
    else:
        await conn.close()
        return False
    parts = urlsplit(url)
    name = unquote(parts.path.lstrip("/"))
    admin = await asyncpg.connect(urlunsplit(parts._replace(path="/postgres")))
    try:
        await admin.execute(f'CREATE DATABASE "{name.replace(chr(34), chr(34) * 2)}"')
    except asyncpg.DuplicateDatabaseError:
        return False  # another starter won the race
    finally:
        await admin.close()
    log.info("created database %s", name)
    return True


async def migrate_url(url: str) -> list[int]:
    conn = await asyncpg.connect(url)
    try:
        return await migrate(conn)
    finally:
        await conn.close()
