"""Running the real clients (``openstack`` with the heatclient plugin, python-heatclient) against Ember."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from libs.embedded.process import free_port
from tests.support import ember, terminate, wait_until

OPENSTACK = str(Path(sys.executable).with_name("openstack"))


@contextlib.contextmanager
def ember_dev(env: Mapping[str, str], log_dir: Path, *, log_level: str = "WARNING") -> Iterator[str]:
    """``ember dev`` on the test's servers; yields the api's base URL once every service is live.

    Its services log at ``log_level`` to ``<log_dir>/dev.log``."""
    port = free_port()
    data = log_dir / "data"
    proc = ember(["dev"], {**env, "EMBER_API_BIND": f"127.0.0.1:{port}", "EMBER_DATA_DIR": str(data),
                           "EMBER_LOG_LEVEL": log_level}, log_dir / "dev.log")
    url = f"http://127.0.0.1:{port}"

    def healthy() -> bool | None:
        try:
            with urllib.request.urlopen(f"{url}/ember/v1/health", timeout=2) as response:
                return json.load(response)["status"] == "ok" or None
        except OSError:
            return None
    try:
        wait_until(healthy, timeout=90, interval=0.2, what="ember dev to be healthy")
        yield url
    finally:
        terminate(proc)


class Osc:
    """The ``openstack`` command with a fixed auth environment; fails the test on a traceback."""

    def __init__(self, auth_env: Mapping[str, str], cwd: Path) -> None:
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")} | dict(auth_env)
        self.cwd = cwd

    def run(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([OPENSTACK, *args], env=self.env, cwd=self.cwd, capture_output=True,
                              text=True, timeout=180, check=False)
        assert "Traceback" not in done.stderr, done.stderr
        if ok:
            assert done.returncode == 0, f"openstack {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
        return done

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args, "-f", "json").stdout)
