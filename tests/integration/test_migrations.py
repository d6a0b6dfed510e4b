"""Migrations apply once, even when several processes start at the same moment."""

from __future__ import annotations

import asyncio
import os
import sys

import asyncpg

from libs.db import migrate
from tests.support import Servers, database_url_for


async def test_concurrent_starters_apply_each_migration_once(servers: Servers) -> None:
    name = "ember_mig_" + asyncio.current_task().get_name().replace("-", "_")[-8:]  # type: ignore[union-attr]
    admin = await asyncpg.connect(servers.admin_db_url)
    await admin.execute(f'CREATE DATABASE "{name}"')
    try:
        url = database_url_for(servers.admin_db_url, name)
        results = await asyncio.gather(*(migrate.migrate_url(url) for _ in range(6)))
        every = [m.version for m in migrate.available()]
        # Exactly one starter applied everything; the others found nothing to do.
        assert sorted(results, key=len) == [[]] * 5 + [every]
        conn = await asyncpg.connect(url)
        try:
            rows = await conn.fetch("SELECT version FROM schema_migrations ORDER BY version")
            assert [r["version"] for r in rows] == every
            assert await migrate.migrate(conn) == []
            assert await conn.fetchval("SELECT to_regclass('services') IS NOT NULL")
        finally:
            await conn.close()
    finally:
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def test_migration_files_are_numbered_without_gaps() -> None:
    versions = [m.version for m in migrate.available()]
    assert versions == list(range(1, len(versions) + 1))


async def test_ember_migrate_creates_a_missing_database(servers: Servers) -> None:
    name = "ember_new_" + asyncio.current_task().get_name().replace("-", "_")[-8:]  # type: ignore[union-attr]
    url = database_url_for(servers.admin_db_url, name)
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "libs.cli", "migrate", env={**os.environ, "EMBER_DATABASE_URL": url,
                                                              "EMBER_NATS_URL": "nats://127.0.0.1:1"},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()
        assert out.decode().startswith("applied [1")
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM schema_migrations") == len(migrate.available())
        finally:
            await conn.close()
        assert await migrate.ensure_database(url) is False
    finally:
        admin = await asyncpg.connect(servers.admin_db_url)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()
