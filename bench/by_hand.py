"""The frame of a by-hand bench: scratch folder, servers, a planner and workers as processes, cleanup.

``bench.hooks``, ``bench.nested`` and ``bench.fairness`` each measure one
thing; this starts and stops what they measure against, as ``bench.engine``
does, and turns a :class:`~bench.engine.BenchError` into exit status 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from bench.engine import BenchError, Servers, Services, drop, prepare, start_servers
from libs import config
from libs.embedded.process import scratch_dir

Measure = Callable[[Servers, Services], Coroutine[Any, Any, None]]


def run(label: str, workers: int, measure: Measure, env: Mapping[str, str] | None = None) -> int:
    """Run ``measure`` against fresh servers and services; ``env`` adds EMBER_* variables for them."""
    settings = config.load(os.environ)
    run_id = uuid.uuid4().hex[:8]
    scratch = scratch_dir(f"ember-bench-{label}-{run_id}-")
    try:
        with contextlib.ExitStack() as stack:
            servers = start_servers(scratch, stack, run_id, pg_stats=False)
            asyncio.run(prepare(servers, pg_stats=False))
            if not (servers.own_postgres and servers.own_nats):
                stack.callback(lambda: asyncio.run(drop(servers)))
            service_env = {**os.environ, "EMBER_DATABASE_URL": servers.database_url,
                           "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": servers.prefix,
                           "EMBER_DATA_DIR": str(scratch / "data"), **(env or {})}
            services = Services(service_env, scratch / "logs", workers, settings.shutdown_grace)
            stack.callback(services.stop)
            services.start()
            print(f"bench.{label} {run_id}: {workers} worker(s), {os.cpu_count()} CPU(s)", flush=True)
            asyncio.run(measure(servers, services))
    except BenchError as exc:
        print(f"bench.{label}: FAILED: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0
