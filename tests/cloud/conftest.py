"""The clouds the conformance tests run on: the simulator (``sim_cloud``) and real OpenStack.

``real_cloud`` stands up Keystone, Glance, Placement, Nova, Neutron and Cinder from PyPI
(scripts/openstack_one_machine) on the machine's MariaDB and RabbitMQ, or reuses the one
that runs; it stops at the end only what it started (``EMBER_OPENSTACK_KEEP=1`` keeps it).
Where MariaDB or RabbitMQ does not answer, its tests skip with one line saying so.
The ``real`` side is marked ``slow_ci``: ./test.sh runs the simulator's side, .ci/run both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from scripts.openstack_one_machine import cloud as one_machine
from scripts.openstack_one_machine import layout as one_machine_layout
from tests.cloud.support import Cleanup, CloudUnderTest, as_cloud_under_test, cleanup_after, sweep

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
    if sides["sim"] and not items[0].session._fixturemanager.getfixturedefs("sim_cloud", sides["sim"][0]):
        reasons["sim"] = "simulated OpenStack: no sim_cloud fixture in this checkout"
    for side, reason in reasons.items():
        for item in sides[side]:
            item.add_marker(pytest.mark.skip(reason=reason))


def _say(config: pytest.Config, line: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
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


@pytest.fixture(params=[
    pytest.param("sim", id="sim"),
    pytest.param("real", id="real", marks=[pytest.mark.slow_ci, pytest.mark.timeout(REAL_TIMEOUT)]),
])
def cloud(request: pytest.FixtureRequest) -> CloudUnderTest:
    """Each conformance test runs once on the simulator and once on real OpenStack."""
    if request.param == "real":
        real: CloudUnderTest = request.getfixturevalue("real_cloud")
        return real
    try:
        sim = request.getfixturevalue("sim_cloud")
    except pytest.FixtureLookupError:
        pytest.skip("simulated OpenStack: no sim_cloud fixture in this checkout")
    return as_cloud_under_test(sim, "sim")


@pytest.fixture
def cleanup() -> Iterator[Cleanup]:
    yield from cleanup_after()
