"""The clouds the conformance tests run on: the simulator (``sim_cloud``) and real OpenStack.

``real_cloud`` stands up Keystone, Glance, Placement, Nova, Neutron and Cinder from PyPI
(scripts/openstack_one_machine) on the machine's MariaDB and RabbitMQ, or reuses the one
that runs; it stops at the end only what it started (``EMBER_OPENSTACK_KEEP=1`` keeps it).
Where MariaDB or RabbitMQ does not answer, its tests skip with one line saying so.
The ``real`` side is marked ``slow_ci``: ./test.sh runs the simulator's side, .ci/run both.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import secrets
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import pytest

from scripts.openstack_one_machine import cloud as one_machine
from scripts.openstack_one_machine import layout as one_machine_layout
from tests.cloud.support import Cleanup, CloudUnderTest, Conn, cleanup_after, sweep
from tests.support import Servers, database_url_for

# The first real test also installs (~2 minutes on a fresh machine) and starts the cloud.
REAL_TIMEOUT = 900


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip a side whose cloud cannot be had, with one line for all its tests (not one per test)."""
    sides: dict[str, list[pytest.Item]] = {"sim": [], "real": []}
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("cloud") in sides:
            sides[callspec.params["cloud"]].append(item)
    reasons: dict[str, str] = {}
    if sides["real"]:
        missing = one_machine.missing_dependencies(one_machine_layout.from_env())
        if missing:
            reasons["real"] = f"real OpenStack: no {' and no '.join(missing)}"
    if sides["sim"] and importlib.util.find_spec("libs.simcloud") is None:
        reasons["sim"] = "simulated OpenStack: no libs.simcloud in this checkout"
    for side, reason in reasons.items():
        _say(config, f"{reason}: its {len(sides[side])} tests skip")
        for item in sides[side]:
            item.add_marker(pytest.mark.skip(reason=reason))


def _say(config: pytest.Config, line: str) -> None:
    """A line on pytest's terminal even while output is captured (the cloud's figures, in CI's log)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None:
        return
    if capture is None:
        reporter.write_line(line)
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)


# Package scope: the cloud stops (if this run started it) once the cloud tests are done.
@pytest.fixture(scope="package")
def real_cloud(pytestconfig: pytest.Config) -> Iterator[CloudUnderTest]:
    layout = one_machine_layout.from_env()
    missing = one_machine.missing_dependencies(layout)
    if missing:
        pytest.skip(f"real OpenStack: no {' and no '.join(missing)}")
    was_running = one_machine.running(layout)
    one_machine.up(layout, log=lambda line: _say(pytestconfig, line))
    try:
        real = CloudUnderTest(kind="real", clouds_yaml=layout.clouds_yaml, member=layout.member_cloud,
                              admin=layout.admin_cloud)
        swept = sweep(real.connect())
        if swept:
            _say(pytestconfig, f"openstack: deleted {swept} things earlier runs left")
        yield real
    finally:
        if not was_running and not os.environ.get("EMBER_OPENSTACK_KEEP"):
            one_machine.stop(layout)


async def _drop_database(admin_url: str, name: str) -> None:
    conn = await asyncpg.connect(admin_url)
    try:
        await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await conn.close()


@pytest.fixture(scope="package")
def sim_cloud(servers: Servers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CloudUnderTest]:
    """``ember simcloud`` on a thread of its own (the tests call openstacksdk synchronously), on a
    database of its own, with the clouds.yaml ``ember dev`` would write for it."""
    # Imported by name: the simulator lands from its own branch (libs/simcloud).
    sim_server: Any = importlib.import_module("libs.simcloud.server")
    dev_cloud: Any = importlib.import_module("libs.simcloud.dev_cloud")
    sim_state: Any = importlib.import_module("libs.simcloud.state")
    sim_seeds: Any = importlib.import_module("libs.simcloud.seeds")
    name = f"simcloud_{uuid.uuid4().hex[:10]}"
    # Passwords no log or answer could hold by chance (the tests look for them there).
    credentials = sim_seeds.Credentials(admin_password=secrets.token_urlsafe(16),
                                        demo_password=secrets.token_urlsafe(16))
    sim = sim_server.InThread(sim_server.Options(
        database_url=database_url_for(servers.admin_db_url, name), port=0,
        settings=sim_state.SimSettings(boot_seconds=0.5), credentials=credentials))
    address = urlsplit(sim.start())
    cloud = dev_cloud.DevCloud(address.hostname, address.port,
                               tmp_path_factory.mktemp("simcloud") / "clouds.yaml", credentials)
    dev_cloud.write(cloud)
    try:
        yield CloudUnderTest(kind="sim", clouds_yaml=cloud.clouds_yaml, member=dev_cloud.CLOUD,
                             admin=dev_cloud.ADMIN_CLOUD)
    finally:
        sim.stop()
        asyncio.run(_drop_database(servers.admin_db_url, name))


@pytest.fixture(params=[
    pytest.param("sim", id="sim"),
    pytest.param("real", id="real", marks=[pytest.mark.slow_ci, pytest.mark.timeout(REAL_TIMEOUT)]),
])
def cloud(request: pytest.FixtureRequest) -> CloudUnderTest:
    """Each conformance test runs once on the simulator and once on real OpenStack."""
    if request.param == "real":
        real: CloudUnderTest = request.getfixturevalue("real_cloud")
        return real
    sim: CloudUnderTest = request.getfixturevalue("sim_cloud")
    return sim


@pytest.fixture
def conn(cloud: CloudUnderTest) -> Conn:
    """The member's connection to the cloud under test."""
    return cloud.connect()


@pytest.fixture
def cleanup() -> Iterator[Cleanup]:
    yield from cleanup_after()
