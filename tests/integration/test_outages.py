"""Services run on their own (no `ember dev`) ride out PostgreSQL and NATS going away and coming back.

While PostgreSQL is down the api answers 503 in Heat's fault shape and health names it; while NATS
is down health names NATS and a create is still accepted. Once each server is back on its port and
data, the services reconnect by themselves and every stack completes.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from libs.embedded.nats import EmbeddedNats
from libs.embedded.postgres import EmbeddedPostgres
from libs.embedded.process import free_port
from libs.messaging.subjects import SERVICES
from tests.integration.outage_support import (
    assert_one_event_per_transition,
    call,
    chained_template,
    create,
    settle,
)
from tests.support import ember, terminate, wait_until

# Process-heavy (servers killed and restarted): run by .ci/run, not ./test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.slow_ci]


def _health(api: str) -> tuple[int, dict[str, Any]]:
    status, body = call(api + "/ember/v1/health")
    assert status != 500, body  # whatever is down, health says so rather than failing
    return status, body


def _dependency_down(api: str, name: str) -> dict[str, Any] | None:
    status, body = _health(api)
    if status != 503 or body["dependencies"][name]["ok"]:
        return None
    return body


def test_services_ride_out_postgresql_and_nats_restarts(scratch_path: Path, tmp_path: Path) -> None:
    pg = EmbeddedPostgres(scratch_path / "postgres", fsync=False)
    ns = EmbeddedNats(scratch_path / "nats")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        database_url, nats_url = pg.start(), ns.start()
        port = free_port()
        api = f"http://127.0.0.1:{port}"
        env = {"EMBER_DATABASE_URL": database_url, "EMBER_NATS_URL": nats_url,
               "EMBER_API_BIND": f"127.0.0.1:{port}", "EMBER_REPORT_INTERVAL": "0.5",
               "EMBER_SHUTDOWN_GRACE": "3", "EMBER_PLAN_SWEEP_SECONDS": "0.5"}
        # The api first: it applies the migrations the others then find done.
        procs.append(ember(["api"], env, tmp_path / "api.log"))
        wait_until(lambda: _health(api)[0] != 0, timeout=60, interval=0.2, what="the api up")
        procs += [ember([service], env, tmp_path / f"{service}.log")
                  for service in SERVICES if service != "api"]
        wait_until(lambda: _health(api)[0] == 200, timeout=60, interval=0.2, what="every service healthy")

        # PostgreSQL stops in the middle of a create.
        during_pg = create(api, "through-postgresql", chained_template(4))
        wait_until(lambda: call(during_pg)[1]["stack"]["stack_status"] == "CREATE_IN_PROGRESS", timeout=10,
                   what="the create under way")
        pg.stop()
        status, fault = call(api + "/v1/demo/stacks")
        assert status == 503, fault
        assert set(fault) == {"code", "error", "explanation", "title"}
        assert fault["code"] == 503 and fault["title"] == "Service Unavailable"
        assert set(fault["error"]) == {"message", "traceback", "type"}
        assert "PostgreSQL" in fault["error"]["message"]
        body = wait_until(lambda: _dependency_down(api, "postgresql"), timeout=10,
                          what="health naming PostgreSQL")
        assert body["dependencies"]["nats"]["ok"] is True
        assert body["status"] == "degraded"
        assert pg.start() == database_url  # the same port and data
        done = settle(during_pg)
        assert done["stack_status"] == "CREATE_COMPLETE", done["stack_status_reason"]
        assert_one_event_per_transition(during_pg, 4)
        wait_until(lambda: _health(api)[0] == 200, timeout=30, interval=0.3, what="healthy after PostgreSQL")

        # NATS stops; a create is accepted all the same, and completes once NATS is back.
        ns.stop()
        body = wait_until(lambda: _dependency_down(api, "nats"), timeout=10, what="health naming NATS")
        assert body["dependencies"]["postgresql"]["ok"] is True
        during_nats = create(api, "through-nats", chained_template(3))
        assert ns.start() == nats_url
        done = settle(during_nats)
        assert done["stack_status"] == "CREATE_COMPLETE", done["stack_status_reason"]
        assert_one_event_per_transition(during_nats, 3)
        wait_until(lambda: _health(api)[0] == 200, timeout=30, interval=0.3, what="healthy after NATS")
        for proc in procs:
            assert proc.poll() is None, "a service died instead of riding out the outage"
    finally:
        for proc in procs:
            terminate(proc)
        ns.stop()
        pg.stop()
