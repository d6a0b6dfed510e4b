"""The cloud's decisions (calls as data, which cloud, constraint lookups) import no I/O library."""

from __future__ import annotations

import subprocess
import sys

DECISIONS = ("libs.cloud.calls", "libs.cloud.caller", "libs.cloud.targets", "libs.cloud.lookups")
IO = ("openstack", "keystoneauth1", "requests", "asyncio", "aiohttp", "asyncpg", "nats")


def test_the_decisions_import_no_io_library() -> None:
    script = (f"import sys\nimport {', '.join(DECISIONS)}\n"
              f"print(sorted(m for m in sys.modules if m.split('.')[0] in {IO!r}))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert loaded.stdout.strip() == "[]"
