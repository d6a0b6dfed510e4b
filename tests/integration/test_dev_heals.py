"""`ember dev` heals by itself: its embedded PostgreSQL or nats-server killed mid-create comes back,
the services ride it out, and the stack completes with exactly one event per resource transition."""

from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from libs.embedded.process import free_port
from tests.support import ember, live_pids_mentioning, terminate, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: that is 0700, and as root PostgreSQL runs as nobody.
    base = Path(tempfile.mkdtemp(prefix="ember-dev-heals-"))
    base.chmod(0o755)
    try:
        yield base / "data"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _call(url: str, method: str = "GET", body: object = None) -> tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
    except OSError as exc:  # the api itself restarting
        return 0, str(exc)


def _stream_events(url: str, into: list[dict[str, Any]], opened: threading.Event) -> None:
    """Read a server-sent event stream to its end, keeping each event's data."""
    with urllib.request.urlopen(url, timeout=30) as response:
        opened.set()
        for line in response:
            if line.startswith(b"data: "):
                into.append(json.loads(line[len(b"data: "):]))


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


def _template() -> dict[str, Any]:
    def props(i: int) -> dict[str, object]:
        chained = {"update_replace_value": {"get_attr": [f"r{i - 1}", "output"]}} if i else {}
        return {"value": f"v{i}", "action_wait_secs": {"create": 1}, **chained}
    return {"heat_template_version": "2016-10-14",
            "resources": {f"r{i}": {"type": "OS::Heat::TestResource", "properties": props(i)}
                          for i in range(5)}}


@pytest.mark.parametrize("victim", [_postmaster_pid, _nats_server_pid], ids=["postgresql", "nats-server"])
def test_a_killed_embedded_server_comes_back_and_the_create_completes(
        victim: Callable[[Path], int], data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    env = {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{port}",
           "EMBER_SHUTDOWN_GRACE": "3", "EMBER_REPORT_INTERVAL": "1"}
    dev = ember(["dev"], env, tmp_path / "dev.log")
    try:
        wait_until(lambda: _call(api + "/ember/v1/health")[0] == 200, timeout=90, interval=0.3,
                   what="ember dev healthy")
        status, created = _call(api + "/v1/demo/stacks", "POST",
                                {"stack_name": "survivor", "template": _template()})
        assert status == 201, created
        stack_url = f"{api}/v1/demo/stacks/survivor/{created['stack']['id']}"

        def under_way() -> bool:
            status, body = _call(stack_url + "/resources")
            return status == 200 and any(r["resource_status"] == "CREATE_COMPLETE"
                                         for r in body["resources"])
        wait_until(under_way, timeout=30, interval=0.1, what="the create under way")
        streamed: list[dict[str, Any]] = []
        opened = threading.Event()
        reader = threading.Thread(target=_stream_events, args=(stack_url + "/events/stream?until=settled",
                                                                streamed, opened), daemon=True)
        reader.start()
        assert opened.wait(10), "the event stream did not open"
        killed = victim(data_dir)
        os.kill(killed, signal.SIGKILL)

        def settled() -> dict[str, Any] | None:
            status, body = _call(stack_url)
            assert status in (0, 200, 503), body  # never a 500, even while a server is down
            return body["stack"] if status == 200 and "IN_PROGRESS" not in body["stack"]["stack_status"] \
                else None
        done = wait_until(settled, timeout=60, interval=0.3, what="the create to settle")
        assert done["stack_status"] == "CREATE_COMPLETE", done["stack_status_reason"]
        assert victim(data_dir) != killed  # restarted, not left alone

        status, body = _call(stack_url + "/events")
        assert status == 200, body
        per_transition = collections.Counter((e["resource_name"], e["resource_status"])
                                             for e in body["events"] if e["resource_name"] != "survivor")
        assert len(per_transition) == 10 and set(per_transition.values()) == {1}, per_transition
        # A stream open across the restart saw every event, to the stack's end.
        reader.join(30)
        assert not reader.is_alive()
        assert sorted(e["id"] for e in streamed) == sorted(e["id"] for e in body["events"])
        wait_until(lambda: _call(api + "/ember/v1/health")[0] == 200, timeout=30, interval=0.3,
                   what="health back to 200")
    finally:
        assert terminate(dev) == 0
