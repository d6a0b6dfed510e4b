"""Real servers for every test run.

Where ``EMBER_DATABASE_URL`` and ``EMBER_NATS_URL`` are set, the run uses those
servers; otherwise the usual local ones (PostgreSQL on 127.0.0.1:5432 as
``postgres``, nats-server with JetStream on 127.0.0.1:4222) where they answer,
and else an embedded PostgreSQL (fsync off) and nats-server on free ports
(``EMBER_TEST_EMBEDDED=1`` asks for those always). Either way the run works in
its own database (created and dropped here) and its own stream prefix, so it
never sees another run's data.

Running servers first: each test's ``CREATE DATABASE ... TEMPLATE`` takes about
0.1 s on the machine's PostgreSQL and 0.4 s on the embedded one, over some 500
tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import nats
import pytest
from nats.aio.client import Client

from libs import config
from libs.db import migrate
from libs.embedded import nats_auth
from libs.embedded.nats import EmbeddedNats
from libs.embedded.postgres import EmbeddedPostgres
from libs.messaging.subjects import Names
from tests.database_supply import DatabaseSupply
from tests.support import Servers, database_url_for, scratch

RUN_ID = uuid.uuid4().hex[:8]
LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_NATS = "nats://127.0.0.1:4222"


async def _answers(db_url: str, nats_url: str) -> tuple[bool, bool]:
    """Whether PostgreSQL (as a superuser) and NATS (with JetStream) answer at these URLs."""
    postgres_ok = nats_ok = False
    with contextlib.suppress(Exception):
        conn = await asyncpg.connect(db_url, timeout=2)
        try:
            postgres_ok = bool(await conn.fetchval(
                "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"))
        finally:
            await conn.close()
    with contextlib.suppress(Exception):
        nc = await nats.connect(nats_url, connect_timeout=2, allow_reconnect=False, max_reconnect_attempts=0)
        try:
            await nc.jetstream().account_info()
            nats_ok = True
        finally:
            await nc.close()
    return postgres_ok, nats_ok


def _running_servers() -> tuple[str | None, str | None]:
    """The URLs of the environment's servers, else of the local ones that answer."""
    db_url = os.environ.get("EMBER_DATABASE_URL")
    nats_url = os.environ.get("EMBER_NATS_URL")
    if os.environ.get("EMBER_TEST_EMBEDDED") == "1" or (db_url and nats_url):
        return db_url, nats_url
    postgres_ok, nats_ok = asyncio.run(_answers(LOCAL_POSTGRES, LOCAL_NATS))
    return db_url or (LOCAL_POSTGRES if postgres_ok else None), nats_url or (LOCAL_NATS if nats_ok else None)


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    db_url, nats_url = _running_servers()
    # One PostgreSQL reaches (else its cluster would go to /var/tmp and outlive the run).
    with scratch(f"ember-test-{RUN_ID}-") as base:
        started: list[EmbeddedPostgres | EmbeddedNats] = []
        try:
            if not db_url:
                pg = EmbeddedPostgres(base / "postgres", fsync=False)
                db_url = pg.start()
                started.append(pg)
            if not nats_url:
                ns = EmbeddedNats(base / "nats")
                nats_url = ns.start()
                started.append(ns)
            yield Servers(admin_db_url=db_url, nats_url=nats_url, embedded=bool(started), scratch=base)
        finally:
            for server in reversed(started):
                server.stop()


@pytest.fixture
def scratch_path() -> Iterator[Path]:
    """A directory of the test's own that embedded servers can use (unlike ``tmp_path``, see scratch)."""
    with scratch("ember-test-") as base:
        yield base


@pytest.fixture
def data_dir(scratch_path: Path) -> Path:
    """An ``ember dev`` data directory, not made yet: dev makes it."""
    return scratch_path / "data"


async def admin(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
def template_database(servers: Servers) -> Iterator[str]:
    """A migrated database that each test clones (CREATE DATABASE ... TEMPLATE is fast)."""
    name = f"ember_tmpl_{RUN_ID}"
    asyncio.run(admin(servers.admin_db_url, f'CREATE DATABASE "{name}"'))
    asyncio.run(migrate.migrate_url(database_url_for(servers.admin_db_url, name)))
    try:
        yield name
    finally:
        asyncio.run(admin(servers.admin_db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture(scope="session")
def database_supply(servers: Servers, template_database: str) -> Iterator[DatabaseSupply]:
    supply = DatabaseSupply(servers.admin_db_url, template_database, f"ember_t_{RUN_ID}")
    try:
        yield supply
    finally:
        supply.close()


@pytest.fixture
async def database_url(servers: Servers, database_supply: DatabaseSupply) -> AsyncIterator[str]:
    name = await asyncio.to_thread(database_supply.take)
    try:
        yield database_url_for(servers.admin_db_url, name)
    finally:
        database_supply.drop_later(name)


@pytest.fixture
def nats_prefix(servers: Servers, database_supply: DatabaseSupply) -> Iterator[str]:
    prefix = f"t{RUN_ID}_{uuid.uuid4().hex[:6]}"
    yield prefix
    database_supply.delete_streams_later(servers.nats_url, prefix)


@dataclasses.dataclass(frozen=True)
class AuthNats:
    """A nats-server that admits only Ember's users (of one prefix), as ``ember dev`` runs it."""

    url: str
    prefix: str
    auth: nats_auth.NatsAuth
    # nats-server's log, where it records each refusal.
    log: Path

    def settings_for(self, settings: config.Settings, service: str) -> config.Settings:
        credential = self.auth.service(service)
        return dataclasses.replace(settings, nats_url=self.url, nats_prefix=self.prefix,
                                   nats_user=credential.user, nats_password=credential.password)

    async def connect(self, credential: nats_auth.Credential | None, errors: list[str]) -> Client:
        """A client as ``credential`` (anonymous: None); the server's refusals land in ``errors``."""
        async def on_error(exc: Exception) -> None:
            errors.append(str(exc))

        login: dict[str, Any] = ({"user": credential.user, "password": credential.password,
                                  "inbox_prefix": credential.inbox_prefix} if credential else {})
        return await nats.connect(self.url, error_cb=on_error, allow_reconnect=False, **login)


@pytest.fixture
def auth_nats(servers: Servers) -> Iterator[AuthNats]:
    """An authenticated nats-server of its own, with integration users for projects alpha and beta."""
    prefix = f"a{RUN_ID}_{uuid.uuid4().hex[:6]}"
    base = servers.scratch / f"nats-{prefix}"
    auth = nats_auth.write(base / "auth", Names(prefix), ("alpha", "beta"))
    server = EmbeddedNats(base / "store", config=auth.config)
    url = server.start()
    try:
        yield AuthNats(url=url, prefix=prefix, auth=auth, log=server.log_path)
    finally:
        server.stop()


@pytest.fixture
def ember_env(database_url: str, servers: Servers, nats_prefix: str) -> dict[str, str]:
    """The EMBER_* variables of a service under test: this test's database and prefix."""
    return {
        "EMBER_DATABASE_URL": database_url,
        "EMBER_NATS_URL": servers.nats_url,
        "EMBER_NATS_PREFIX": nats_prefix,
        "EMBER_REPORT_INTERVAL": "0.5",
        "EMBER_SHUTDOWN_GRACE": "5",
        "EMBER_LOG_LEVEL": "DEBUG",
    }


@pytest.fixture
def settings(ember_env: dict[str, str]) -> config.Settings:
    return config.load(ember_env)


@pytest.fixture(autouse=True)
def _fail_on_unretrieved_task_errors(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that leaves an unretrieved task exception (or any loop error) fails."""
    if not asyncio.iscoroutinefunction(getattr(request.node, "obj", None)):
        yield
        return
    errors: list[dict[str, Any]] = []
    request.getfixturevalue("_loop_error_sink")(errors)
    yield
    gc.collect()
    if errors:
        pytest.fail("event loop reported errors: " + "; ".join(str(e.get("message")) + " "
                                                             + repr(e.get("exception")) for e in errors))


@pytest.fixture
async def _loop_error_sink() -> AsyncIterator[Any]:
    loop = asyncio.get_running_loop()
    sinks: list[list[dict[str, Any]]] = []

    def collect(_loop: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
        for sink in sinks:
            sink.append(ctx)

    loop.set_exception_handler(collect)
    yield sinks.append
    # Tasks that die with the test are collected here, while the handler still listens. What
    # survives is frozen (left out of every later collection): each test's collection then reads
    # only the objects made since, not the whole run's heap (0.1 s a collection, twice a test).
    gc.collect()
    gc.freeze()
    loop.set_exception_handler(None)
