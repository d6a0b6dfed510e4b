"""The simulated OpenStack on a database of its own, driven through the real openstacksdk."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator

import asyncpg
import openstack
import pytest
from openstack.connection import Connection

from libs.simcloud import server
from libs.simcloud.state import SimSettings
from tests.support import Servers, database_url_for


async def drop_database(admin_url: str, name: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


class Sim:
    """A running simulator: its URL, its database, and connections as its seeded users."""

    def __init__(self, url: str, database_url: str) -> None:
        self.url = url
        self.database_url = database_url

    def connect(self, user: str = "demo", project: str | None = None) -> Connection:
        return openstack.connect(auth_url=f"{self.url}/identity", username=user, password=user,
                                 project_name=project or user, user_domain_name="Default",
                                 project_domain_name="Default", region_name="RegionOne")


def start_sim(servers: Servers, settings: SimSettings,
              name: str | None = None) -> tuple[server.InThread, str]:
    name = name or f"simcloud_{uuid.uuid4().hex[:10]}"
    database_url = database_url_for(servers.admin_db_url, name)
    sim = server.InThread(server.Options(database_url=database_url, port=0, settings=settings))
    sim.start()
    return sim, database_url


@pytest.fixture(scope="module")
def sim(servers: Servers) -> Iterator[Sim]:
    """One simulator per test module (boots and deletes take 0.2 s)."""
    settings = SimSettings(boot_seconds=0.2, import_seconds=0.2, delete_seconds=0.2)
    running, database_url = start_sim(servers, settings)
    try:
        yield Sim(running.url, database_url)
    finally:
        running.stop()
        asyncio.run(drop_database(servers.admin_db_url, database_url.rsplit("/", 1)[1]))


@pytest.fixture(scope="module")
def cloud(sim: Sim) -> Connection:
    return sim.connect("demo")


@pytest.fixture(scope="module")
def admin_cloud(sim: Sim) -> Connection:
    return sim.connect("admin")
