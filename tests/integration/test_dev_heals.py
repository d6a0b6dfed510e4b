"""`ember dev` heals by itself: its embedded PostgreSQL or nats-server killed mid-create comes back
on its port and data, the services ride it out, and the stack completes with exactly one event per
resource transition."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from libs.embedded.process import free_port
from tests.integration.outage_support import (
    StreamReader,
    assert_one_event_per_transition,
    call,
    chained_template,
    create,
    settle,
)
from tests.support import ember, live_pids_mentioning, terminate, wait_until

# Process-heavy (servers killed and restarted): run by .ci/run, not ./test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.slow_ci]


def _health(api: str) -> int:
    status, body = call(api + "/ember/v1/health")
    assert status != 500, body
    return status


def _postmaster_pid(data_dir: Path) -> int:
    cluster = data_dir / "postgres"
    location = cluster / "LOCATION"
    if location.is_file():
        cluster = cluster / location.read_text().splitlines()[0].strip()
    return int((cluster / "postmaster.pid").read_text().split("\n", 1)[0])


def _nats_server_pid(data_dir: Path) -> int:
    store = str(data_dir / "nats")
    pids = [pid for pid in live_pids_mentioning(store)
            if b"nats-server" in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]]
    assert len(pids) == 1, pids
    return pids[0]


@pytest.mark.parametrize("victim", [_postmaster_pid, _nats_server_pid], ids=["postgresql", "nats-server"])
def test_a_killed_embedded_server_comes_back_and_the_create_completes(
        victim: Callable[[Path], int], data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    env = {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{port}",
           "EMBER_SHUTDOWN_GRACE": "3", "EMBER_REPORT_INTERVAL": "1"}
    dev = ember(["dev"], env, tmp_path / "dev.log")
    try:
        wait_until(lambda: _health(api) == 200, timeout=90, interval=0.3, what="ember dev healthy")
        stack_url = create(api, "survivor", chained_template(5))

        def under_way() -> bool:
            status, body = call(stack_url + "/resources")
            return status == 200 and any(r["resource_status"] == "CREATE_COMPLETE"
                                         for r in body["resources"])
        wait_until(under_way, timeout=30, interval=0.1, what="the create under way")
        stream = StreamReader(stack_url)
        stream.start()
        assert stream.opened.wait(10), "the event stream did not open"

        killed = victim(data_dir)
        os.kill(killed, signal.SIGKILL)
        done = settle(stack_url)
        assert done["stack_status"] == "CREATE_COMPLETE", done["stack_status_reason"]
        assert victim(data_dir) != killed  # restarted, not left dead
        events = assert_one_event_per_transition(stack_url, 5)
        # A stream open across the restart saw every event, to the stack's end.
        stream.join(30)
        assert not stream.is_alive()
        assert sorted(e["id"] for e in stream.events) == sorted(e["id"] for e in events)
        wait_until(lambda: _health(api) == 200, timeout=30, interval=0.3, what="health back to 200")
    finally:
        assert terminate(dev) == 0
