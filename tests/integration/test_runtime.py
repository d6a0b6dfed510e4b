"""A service's runtime: heartbeat row, control ping, orderly retirement."""

from __future__ import annotations

import asyncpg

from libs.config import Settings
from libs.db import services
from libs.runtime import open_runtime
from tests.support import eventually


async def test_runtime_registers_beats_answers_and_retires(settings: Settings, database_url: str) -> None:
    async with open_runtime(settings, "worker") as rt, open_runtime(settings, "api") as api:
        conn = await asyncpg.connect(database_url)
        try:
            first = (await services.list_all(conn))
            mine = next(r for r in first if r.id == rt.service_id)
            assert (mine.service, mine.report_interval) == ("worker", settings.report_interval)

            async def beat_seen() -> bool:
                row = next(r for r in await services.list_all(conn) if r.id == rt.service_id)
                return row.updated_at > mine.updated_at
            await eventually(beat_seen, what="a heartbeat")

            replies = await api.bus.gather_replies(api.names.control_ping("worker"), b"x", 2.0,
                                                   expected=1)
            assert len(replies) == 1
            assert f'"service_id":"{rt.service_id}"'.encode() in replies[0].data
        finally:
            await conn.close()
    conn = await asyncpg.connect(database_url)
    try:
        rows = await services.list_all(conn, include_deleted=True)
        assert all(r.deleted_at is not None for r in rows)
        assert await services.list_all(conn) == []
    finally:
        await conn.close()
