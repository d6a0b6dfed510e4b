"""The ``services`` table: one heartbeat row per running process."""

from __future__ import annotations

import dataclasses
import datetime
import uuid

from libs.db import Conn


@dataclasses.dataclass(frozen=True)
class ServiceRow:
    id: uuid.UUID
    service: str
    host: str
    hostname: str
    pid: int
    topic: str
    report_interval: float
    created_at: datetime.datetime
    updated_at: datetime.datetime
    deleted_at: datetime.datetime | None

    def is_up(self, now: datetime.datetime) -> bool:
        # Heat's rule: up while reported within two intervals.
        return self.deleted_at is None and (now - self.updated_at).total_seconds() <= 2 * self.report_interval


async def register(conn: Conn, *, service_id: uuid.UUID, service: str, host: str,
                   hostname: str, pid: int, topic: str, report_interval: float) -> None:
    await conn.execute(
        "INSERT INTO services (id, service, host, hostname, pid, topic, report_interval)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7)",
        service_id, service, host, hostname, pid, topic, report_interval,
    )
    # Heat removes rows that stopped reporting three intervals ago; a crashed
    # process never deletes its own row.
    await conn.execute(
        "DELETE FROM services WHERE updated_at < now() - make_interval(secs => report_interval * 3)"
    )


async def beat(conn: Conn, service_id: uuid.UUID) -> bool:
    status = await conn.execute(
        "UPDATE services SET updated_at = now() WHERE id = $1 AND deleted_at IS NULL", service_id
    )
    return status.endswith(" 1")


async def retire(conn: Conn, service_id: uuid.UUID) -> None:
    await conn.execute("UPDATE services SET deleted_at = now(), updated_at = now() WHERE id = $1",
                       service_id)


async def list_all(conn: Conn, *, include_deleted: bool = False) -> list[ServiceRow]:
    rows = await conn.fetch(
        "SELECT id, service, host, hostname, pid, topic, report_interval, created_at, updated_at,"
        " deleted_at FROM services"
        + ("" if include_deleted else " WHERE deleted_at IS NULL")
        + " ORDER BY service, created_at"
    )
    return [ServiceRow(**dict(r)) for r in rows]


async def clock(conn: Conn) -> datetime.datetime:
    """The database's time: heartbeats are written by its clock, so they are judged by it."""
    now: datetime.datetime = await conn.fetchval("SELECT now()")
    return now
