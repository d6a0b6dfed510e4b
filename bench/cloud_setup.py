"""What the cloud benchmarks (``bench.cloud``, ``bench.observer``) run and how they talk to it.

:func:`start` brings up, each as a process, an embedded PostgreSQL and nats-server
(or ``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL``'s, in a fresh database and stream
prefix, as ``bench.engine``), ``ember simcloud`` on that database with the
``clouds.yaml`` ``ember dev`` writes, and ``ember api`` (noauth, template limits
lifted); :class:`Api` is Heat's REST API as a user calls it.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import openstack
import orjson
import requests
from openstack.config.loader import OpenStackConfig
from opentelemetry import trace

from bench import engine
from bench.cloud_report import Phase, Tree, calls_logged, minus
from libs.embedded import process
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.simcloud import dev_cloud

PROJECT = "demo"
STARTUP_TIMEOUT = 120.0
_JSON = {"Content-Type": "application/json"}


# ---- the simulator -------------------------------------------------------------------------
def connection(cloud: dev_cloud.DevCloud, entry: str, project: str | None = None
               ) -> openstack.connection.Connection:
    """openstacksdk on ``entry`` of the simulator's clouds.yaml (in ``project``, else the entry's own)."""
    options: dict[str, Any] = {"auth": {"project_name": project}} if project else {}
    config = OpenStackConfig(config_files=[str(cloud.clouds_yaml)], load_envvars=False)
    return openstack.connection.Connection(config=config.get_one(entry, **options))


def wait_simulator(cloud: dev_cloud.DevCloud, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    # keystoneauth warns on every try before the simulator listens.
    logging.getLogger("keystoneauth").setLevel(logging.ERROR)
    while True:
        process.check_running(proc, log)
        try:
            connection(cloud, dev_cloud.CLOUD).compute.find_flavor("m1.tiny", ignore_missing=False)
            return
        except Exception:  # not answering yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


# ---- the REST API --------------------------------------------------------------------------
class Api:
    """Heat's REST API as a user calls it (noauth: the path names the project)."""

    def __init__(self, url: str, project: str = PROJECT) -> None:
        self.base = f"{url}/v1/{project}"
        self.http = requests.Session()

    def ready(self) -> bool:
        try:
            return self.http.get(f"{self.base}/stacks", timeout=5).status_code == 200
        except requests.RequestException:
            return False

    def _expect(self, answer: requests.Response, *codes: int) -> requests.Response:
        if answer.status_code not in codes:
            raise engine.BenchError(f"{answer.request.method} {answer.url}: {answer.status_code} "
                                    f"{answer.text[:500]}")
        return answer

    def create(self, name: str, tmpl: Mapping[str, Any]) -> str:
        body = orjson.dumps({"stack_name": name, "template": tmpl})
        answer = self.http.post(f"{self.base}/stacks", data=body, headers=_JSON, timeout=600)
        return str(self._expect(answer, 201).json()["stack"]["id"])

    def update(self, name: str, stack_id: str, tmpl: Mapping[str, Any]) -> None:
        answer = self.http.put(f"{self.base}/stacks/{name}/{stack_id}", data=orjson.dumps({"template": tmpl}),
                               headers=_JSON, timeout=600)
        self._expect(answer, 202)

    def delete(self, name: str, stack_id: str) -> None:
        self._expect(self.http.delete(f"{self.base}/stacks/{name}/{stack_id}", timeout=600), 204)

    def status(self, name: str, stack_id: str) -> tuple[str, str]:
        """The stack's status and reason; ("DELETE_COMPLETE", "") once it is gone."""
        answer = self.http.get(f"{self.base}/stacks/{name}/{stack_id}", timeout=60)
        if answer.status_code == 404:
            return "DELETE_COMPLETE", ""
        stack = self._expect(answer, 200).json()["stack"]
        return str(stack["stack_status"]), str(stack.get("stack_status_reason") or "")


# ---- what runs under the benchmark ---------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Setup:
    """PostgreSQL and NATS, ``ember simcloud`` and ``ember api`` running, and the services' environment."""

    scratch: Path
    logs: Path
    servers: engine.Servers
    cloud: dev_cloud.DevCloud
    sim: subprocess.Popen[bytes]
    api: subprocess.Popen[bytes]
    api_log: Path
    api_url: str
    # For Ember's services: the servers, the cloud, noauth, the api's template limits lifted.
    env: dict[str, str]


def start(stack: contextlib.ExitStack, name: str, run_id: str, *, keep: bool, sim_args: Sequence[str] = (),
          env: Mapping[str, str] | None = None, fsync: bool = False) -> Setup:
    """Everything a cloud benchmark drives, each stopped by ``stack``; returns once the simulator and
    the api answer. ``env`` adds to (or overrides) the services' environment; ``fsync``: an embedded
    PostgreSQL's, as ``ember dev`` runs it (off by default, as in the tests)."""
    scratch = process.scratch_dir(f"{name}-{run_id}-")
    if keep:
        stack.callback(print, f"kept: {scratch}")
    else:
        stack.callback(shutil.rmtree, scratch, True)
    servers = engine.start_servers(scratch, stack, run_id, pg_stats=False, fsync=fsync)
    asyncio.run(engine.prepare(servers, pg_stats=False))
    if not (servers.own_postgres and servers.own_nats) and not keep:
        stack.callback(lambda: asyncio.run(engine.drop(servers)))
    logs = scratch / "logs"
    logs.mkdir()
    cloud = dev_cloud.DevCloud("127.0.0.1", process.free_port(), scratch / "clouds.yaml")
    dev_cloud.write(cloud)
    sim_log = logs / "simcloud.log"
    sim = process.spawn([sys.executable, "-m", "libs.cli", *cloud.argv(servers.database_url), *sim_args],
                        log_path=sim_log, cwd=engine.REPO, env={**os.environ, "EMBER_LOG_LEVEL": "WARNING"})
    stack.callback(stop, sim)
    api_port = process.free_port()
    services_env = {
        **os.environ, **cloud.env(), "EMBER_DATABASE_URL": servers.database_url,
        "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": servers.prefix,
        "EMBER_DATA_DIR": str(scratch / "data"), "EMBER_API_BIND": f"127.0.0.1:{api_port}",
        "EMBER_AUTH": "noauth", "EMBER_MAX_RESOURCES_PER_STACK": "-1",
        "EMBER_MAX_TEMPLATE_SIZE": str(64 << 20), "EMBER_MAX_JSON_BODY_SIZE": str(64 << 20), **(env or {})}
    services_env.setdefault("EMBER_LOG_LEVEL", "INFO")
    api_log = logs / "api.log"
    api_proc = process.spawn([sys.executable, "-m", "libs.cli", "api"], log_path=api_log, env=services_env,
                             cwd=engine.REPO)
    stack.callback(stop, api_proc)
    wait_simulator(cloud, sim, sim_log)
    api_url = f"http://127.0.0.1:{api_port}"
    api = Api(api_url)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while not api.ready():
        process.check_running(api_proc, api_log)
        if time.monotonic() > deadline:
            raise engine.BenchError("the api did not answer in time")
        time.sleep(0.2)
    return Setup(scratch, logs, servers, cloud, sim, api_proc, api_log, api_url, services_env)


async def services_ready(servers: engine.Servers, services: engine.Services) -> None:
    """Until the planner and every worker have answered a probe."""
    names = Names(servers.prefix)
    async with Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="bench-cloud") as bus:
        await engine.wait_ready(bus, services)


def measured(name: str, servers: engine.Servers, services: engine.Services, fixed: Sequence[Tree], *,
             submit: Callable[[], None], settle: Callable[[], None]) -> Phase:
    """A phase run by ``services`` (started for it, stopped after): ``submit`` sends the requests,
    ``settle`` waits until they are done. Peaks and CPU are the phase's own, for ``fixed`` (running
    already) and the services; the calls are those the workers logged when they stopped."""
    try:
        services.start()
        asyncio.run(services_ready(servers, services))
        watched = [*fixed, *(Tree(w.label, w.pid) for w in services.watched())]
        for each in fixed:
            each.reset_peak()
        cpu = {w.label: w.cpu_seconds() for w in watched}
        started = time.perf_counter()
        submit()
        answered = time.perf_counter() - started
        settle()
        seconds = time.perf_counter() - started
        peaks = {w.label: w.peak_rss_mb() for w in watched}
        spent = {w.label: minus(w.cpu_seconds(), cpu[w.label]) for w in watched}
    except BaseException:
        print("\n".join(services.problems()), file=sys.stderr)
        raise
    finally:
        services.stop()
    calls: collections.Counter[str] = collections.Counter()
    for label in services.labels[1:]:
        calls.update(calls_logged(services.log_path(label)))
    return Phase(name, seconds, answered, calls, peaks, spent)


def stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then SIGKILL after 30 s."""
    process.stop(proc, timeout=30.0)


def guarded(name: str, work: Callable[[], None]) -> int:
    """``work`` run with Ctrl-C, SIGTERM and SIGHUP as KeyboardInterrupt; its exit status (a failure
    printed)."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    try:
        work()
    except engine.BenchError as exc:
        print(f"{name}: FAILED: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception:
        print(f"{name}: FAILED:\n{traceback.format_exc()}", file=sys.stderr)
        return 1
    return 0


def load() -> str:
    """The machine's load averages, as a line's words."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"
