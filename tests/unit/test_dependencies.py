"""Which server an error says is down: what the api's 503 and health name."""

from __future__ import annotations

import asyncpg
import nats.errors
import nats.js.errors
import pytest

from libs.db.pool import DatabaseUnavailable
from libs.dependencies import Dependency, down_in, unavailable_message


@pytest.mark.parametrize(("error", "expected"), [
    (DatabaseUnavailable("cannot connect to PostgreSQL: refused"), Dependency.POSTGRESQL),
    (asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
     Dependency.POSTGRESQL),
    (asyncpg.CannotConnectNowError("the database system is starting up"), Dependency.POSTGRESQL),
    (asyncpg.AdminShutdownError("terminating connection due to administrator command"),
     Dependency.POSTGRESQL),
    (asyncpg.InternalClientError("cannot switch to state 11; another operation (2) is in progress"),
     Dependency.POSTGRESQL),
    (asyncpg.InterfaceError("cannot call Transaction.__aexit__(): the underlying connection is closed"),
     Dependency.POSTGRESQL),
    (nats.errors.ConnectionClosedError(), Dependency.NATS),
    (nats.errors.TimeoutError(), Dependency.NATS),
    (nats.errors.NoRespondersError(), Dependency.NATS),
    (nats.js.errors.ServiceUnavailableError(), Dependency.NATS),
    # Failures that are not a server being down stay what they are: a bug answers 500.
    (asyncpg.UniqueViolationError("duplicate key"), None),
    (asyncpg.InterfaceError("the server expects 1 argument for this query, 2 were passed"), None),
    (asyncpg.QueryCanceledError("canceling statement due to statement timeout"), None),
    (TimeoutError(), None),
    (ConnectionRefusedError(), None),  # not from the pool: whose connection, nobody can say
    (KeyError("x"), None),
])
def test_down_in(error: BaseException, expected: Dependency | None) -> None:
    assert down_in(error) == expected


def test_the_message_names_the_server() -> None:
    assert "PostgreSQL" in unavailable_message(Dependency.POSTGRESQL)
    assert "NATS" in unavailable_message(Dependency.NATS)
