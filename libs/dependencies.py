"""The servers every service depends on, and which of them an error says is down.

A request or a step that fails because PostgreSQL or NATS is unreachable has
done nothing wrong: the api answers 503 naming the server (never 500), health
reports it, and the work is tried again once the server is back.
"""

from __future__ import annotations

import enum

import asyncpg

from libs.db.pool import DatabaseUnavailable
from libs.messaging.failures import BUS_DOWN


class Dependency(enum.StrEnum):
    POSTGRESQL = "postgresql"
    NATS = "nats"


# The server went away mid-query, is shutting down or starting, or cannot be reached. asyncpg
# raises InternalClientError on a connection whose server sent its dying words between two
# queries (Ember never shares a connection between tasks, the other way to get it).
_POSTGRESQL_DOWN = (DatabaseUnavailable, asyncpg.PostgresConnectionError, asyncpg.AdminShutdownError,
                    asyncpg.CrashShutdownError, asyncpg.CannotConnectNowError, asyncpg.InternalClientError)


def _closed_under_us(error: BaseException) -> bool:
    # asyncpg has no type of its own for using a connection the server closed meanwhile; its
    # InterfaceError also means misuse (wrong arguments), which must stay a bug.
    return isinstance(error, asyncpg.InterfaceError) and "connection is closed" in str(error)


def down_in(error: BaseException) -> Dependency | None:
    """The server ``error`` says is unavailable, or None if it is some other failure."""
    if isinstance(error, _POSTGRESQL_DOWN) or _closed_under_us(error):
        return Dependency.POSTGRESQL
    if isinstance(error, BUS_DOWN):
        return Dependency.NATS
    return None


def unavailable_message(dependency: Dependency) -> str:
    """What a client is told while ``dependency`` is down."""
    what = {Dependency.POSTGRESQL: "The database (PostgreSQL)",
            Dependency.NATS: "The message bus (NATS)"}[dependency]
    return f"{what} is unavailable; try again shortly."
