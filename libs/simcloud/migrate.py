"""The simulator's own migrations, in its own schema (``simcloud``), apart from Ember's.

Files are ``migrations/NNNN_name.sql``, applied in order under an advisory lock;
``simcloud.schema_migrations`` records them. 0001-0049 belong to the frame,
Keystone, Nova and Glance; 0050-0099 to Neutron and Cinder.
"""

from __future__ import annotations

import re
from importlib import resources

from libs.db import Conn

# pg_advisory_xact_lock key: "simcloud" as a signed 64-bit integer.
_LOCK_KEY = int.from_bytes(b"simcloud", "big") - (1 << 63)
_NAME_RE = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def available() -> list[tuple[int, str, str]]:
    """(version, name, sql) of every migration file, in order."""
    found = []
    for entry in resources.files("libs.simcloud").joinpath("migrations").iterdir():
        match = _NAME_RE.match(entry.name)
        if match:
            found.append((int(match.group(1)), match.group(2), entry.read_text("utf-8")))
    found.sort()
    versions = [v for v, _, _ in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"two simcloud migrations share a number: {versions}")
    return found


async def migrate(conn: Conn) -> list[int]:
    """Apply what is missing; the versions this call applied."""
    applied: list[int] = []
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _LOCK_KEY)
        await conn.execute("CREATE SCHEMA IF NOT EXISTS simcloud")
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS simcloud.schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL,"
            " applied_at timestamptz NOT NULL DEFAULT now())")
        done = {r["version"] for r in await conn.fetch("SELECT version FROM simcloud.schema_migrations")}
        for version, name, sql in available():
            if version in done:
                continue
            await conn.execute(sql)
            await conn.execute("INSERT INTO simcloud.schema_migrations (version, name) VALUES ($1, $2)",
                               version, name)
            applied.append(version)
    return applied
