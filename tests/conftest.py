"""Real servers for every test run.

Where ``EMBER_DATABASE_URL`` and ``EMBER_NATS_URL`` are set, the run uses those
servers; otherwise it starts an embedded PostgreSQL (fsync off) and nats-server
on free ports. Either way the run works in its own database (created and
dropped here) and its own stream prefix, so it never sees another run's data.
"""

from __future__ import annotations

import asyncio
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
from tests.support import Servers, database_url_for, scratch

RUN_ID = uuid.uuid4().hex[:8]


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    db_url = os.environ.get("EMBER_DATABASE_URL")
    nats_url = os.environ.get("EMBER_NATS_URL")
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


@pytest.fixture
async def database_url(servers: Servers, template_database: str) -> AsyncIterator[str]:
    name = f"ember_t_{RUN_ID}_{uuid.uuid4().hex[:8]}"
    await admin(servers.admin_db_url, f'CREATE DATABASE "{name}" TEMPLATE "{template_database}"')
    try:
        yield database_url_for(servers.admin_db_url, name)
    finally:
        await admin(servers.admin_db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def nats_prefix(servers: Servers) -> AsyncIterator[str]:
    prefix = f"t{RUN_ID}_{uuid.uuid4().hex[:6]}"
    yield prefix
    await drop_streams(servers.nats_url, prefix)


async def drop_streams(nats_url: str, prefix: str) -> None:
    """Delete the JetStream streams a run made under ``prefix`` (a shared server keeps them)."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        for stream in await js.streams_info():
            if stream.config.name and stream.config.name.startswith(prefix.upper() + "_"):
                await js.delete_stream(stream.config.name)
    finally:
        await nc.close()


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
    # Tasks that die with the test are collected here, while the handler still listens.
    gc.collect()
    loop.set_exception_handler(None)
