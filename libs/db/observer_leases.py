"""``observer_leases``: which observer lists which cloud project, so no listing is done twice."""

from __future__ import annotations

import uuid

from libs.db import Conn


async def take(conn: Conn, cloud: str, cloud_project: str, holder: uuid.UUID, seconds: float) -> bool:
    """Take or renew the lease for ``seconds``; False while another holder's lease runs."""
    taken = await conn.fetchval(
        "INSERT INTO observer_leases AS l (cloud, cloud_project, holder, expires_at)"
        " VALUES ($1, $2, $3, now() + make_interval(secs => $4))"
        " ON CONFLICT (cloud, cloud_project) DO UPDATE"
        " SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at"
        " WHERE l.holder = EXCLUDED.holder OR l.expires_at < now() RETURNING true",
        cloud, cloud_project, holder, seconds)
    return bool(taken)


async def held(conn: Conn, holder: uuid.UUID) -> set[tuple[str, str]]:
    """The cloud projects whose lease ``holder`` holds now."""
    rows = await conn.fetch("SELECT cloud, cloud_project FROM observer_leases"
                            " WHERE holder = $1 AND expires_at >= now()", holder)
    return {(r["cloud"], r["cloud_project"]) for r in rows}


async def release(conn: Conn, holder: uuid.UUID, leases: set[tuple[str, str]] | None = None) -> None:
    """Give leases up (all of the holder's by default), so another observer takes them at once."""
    if leases is None:
        await conn.execute("DELETE FROM observer_leases WHERE holder = $1", holder)
        return
    for cloud, cloud_project in leases:
        await conn.execute("DELETE FROM observer_leases WHERE holder = $1 AND cloud = $2"
                           " AND cloud_project = $3", holder, cloud, cloud_project)


async def observers_up(conn: Conn, report_grace: float) -> int:
    """How many observers reported within ``report_grace`` intervals (at least this one)."""
    count: int = await conn.fetchval(
        "SELECT count(*) FROM services WHERE service = 'observer' AND deleted_at IS NULL"
        " AND updated_at >= now() - make_interval(secs => report_interval * $1)", report_grace)
    return max(count, 1)
