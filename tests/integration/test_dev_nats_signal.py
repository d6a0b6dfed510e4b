"""`ember dev`: a simulated server's agent answers NATS_SIGNAL through dev's own nats-server, which
admits it only as its project's user."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from libs.embedded.process import free_port
from tests.support import ember, terminate, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = {
    "heat_template_version": "2016-10-14",
    "resources": {
        "server": {"type": "OS::Nova::Server", "properties": {
            "flavor": "m1.tiny", "image": "cirros", "networks": [{"network": "private"}],
            "user_data_format": "SOFTWARE_CONFIG"}},
        "config": {"type": "OS::Heat::SoftwareConfig", "properties": {
            "group": "script", "inputs": [{"name": "foo"}], "outputs": [{"name": "result"}],
            "config": '#!/bin/sh\necho "hello $foo"\nprintf "got $foo" > "$heat_outputs_path.result"\n'}},
        "deployment": {"type": "OS::Heat::SoftwareDeployment", "properties": {
            "config": {"get_resource": "config"}, "server": {"get_resource": "server"},
            "input_values": {"foo": "nats"}, "signal_transport": "NATS_SIGNAL"}},
    },
    "outputs": {"result": {"value": {"get_attr": ["deployment", "result"]}}},
}


@pytest.fixture
def data_dir() -> Iterator[Path]:
    # Open to others: the agents' runs (as nobody, under root) reach their servers' folders in it.
    base = Path(tempfile.mkdtemp(prefix="ember-dev-nats-"))
    base.chmod(0o755)
    try:
        yield base / "data"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _call(method: str, url: str, body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.load(response)
    except (urllib.error.URLError, OSError):
        return None


def _settled(url: str) -> dict[str, Any] | None:
    shown = _call("GET", url)
    stack = shown["stack"] if shown else None
    return stack if stack and not stack["stack_status"].endswith("IN_PROGRESS") else None


def test_a_simulated_server_answers_nats_signal_in_dev(data_dir: Path, tmp_path: Path,
                                                       database_url: str) -> None:
    port = free_port()
    api = f"http://127.0.0.1:{port}"
    env = {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{port}",
           "EMBER_SHUTDOWN_GRACE": "5", "EMBER_DATABASE_URL": database_url, "OS_CLOUD": "",
           "OS_CLIENT_CONFIG_FILE": ""}
    proc = ember(["dev"], env, tmp_path / "dev.log")
    try:
        wait_until(lambda: "Ember is running." in (tmp_path / "dev.log").read_text(), timeout=90,
                   interval=0.3, what="the banner")
        made = _call("POST", f"{api}/v1/demo/stacks", {"stack_name": "over_nats", "template": TEMPLATE})
        assert made is not None, (tmp_path / "dev.log").read_text()[-3000:]
        stack = wait_until(lambda: _settled(f"{api}/v1/demo/stacks/over_nats/{made['stack']['id']}"),
                           timeout=120, interval=0.5, what="the stack to settle")
        assert stack["stack_status"] == "CREATE_COMPLETE", stack["stack_status_reason"]
        assert {o["output_key"]: o["output_value"] for o in stack["outputs"]} == {"result": "got nats"}
        logs = "".join(p.read_text(errors="replace") for p in (data_dir / "servers").glob("*.log"))
        assert "published to " in logs and "signal delivered" in logs
    finally:
        assert terminate(proc) == 0
