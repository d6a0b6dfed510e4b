"""Bring the one-machine cloud up (install, configure, sync, start, wait, seed), stop it, drop it.

Every step is idempotent: ``up`` on a running cloud only checks it and rewrites clouds.yaml.
The order matters in two places: Keystone answers (and knows the service users) before the
others start, and Placement answers before nova-compute starts (else it waits a minute
for its next report).
"""

from __future__ import annotations

import dataclasses
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable

import openstack.connection

from scripts.openstack_one_machine import credentials, install, processes, provision, seed
from scripts.openstack_one_machine.layout import COMPUTE_HOST, HOST, PORTS, Api, Daemon, Layout, url

START_TIMEOUT = 240.0


class NotReady(RuntimeError):
    """A service did not come up in time: names it and where its log is."""


@dataclasses.dataclass
class Timings:
    install: float = 0.0
    databases: float = 0.0
    start: float = 0.0
    seed: float = 0.0
    installed_now: bool = False
    synced: list[str] = dataclasses.field(default_factory=list)

    def describe(self) -> str:
        fresh = "installed" if self.installed_now else "venv reused"
        synced = ",".join(self.synced) or "none"
        return (f"install {self.install:.0f}s ({fresh}), databases {self.databases:.0f}s (synced: {synced}), "
                f"start+ready {self.start:.0f}s, seed {self.seed:.0f}s")


def answers(host: str, port: int, *, timeout: float = 1.0) -> bool:
    """Whether something listens at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def missing_dependencies(layout: Layout) -> list[str]:
    """What of MariaDB and RabbitMQ does not answer (empty: both do)."""
    missing = []
    host, port = layout.mysql_host_port
    if not answers(host, port):
        missing.append(f"MariaDB at {host}:{port}")
    host, port = layout.rabbit_host_port
    if not answers(host, port):
        missing.append(f"RabbitMQ at {host}:{port}")
    return missing


def _http_answers(api: Api) -> bool:
    try:
        with urllib.request.urlopen(url(api) + "/", timeout=5) as reply:
            return bool(reply.status < 500)
    except urllib.error.HTTPError as exc:
        return exc.code < 500
    except (OSError, ValueError):
        return False


def _wait(layout: Layout, what: str, probe: Callable[[], bool], watched: list[str], deadline: float) -> None:
    """Poll ``probe`` until it holds; fail early, naming the log, if a watched process died."""
    while not probe():
        dead = [name for name in watched if processes.exited(layout, name)]
        if dead:
            log = layout.logs / f"{dead[0]}.log"
            raise NotReady(f"{', '.join(dead)} exited while waiting for {what}; see {log}")
        if time.monotonic() > deadline:
            raise NotReady(f"{what} not ready after {START_TIMEOUT:.0f}s; logs in {layout.logs}")
        time.sleep(0.5)


def _computes_ready(conn: openstack.connection.Connection) -> bool:
    services = {(s.binary, s.host): s.state for s in conn.compute.services()}
    wanted = ("nova-conductor", "nova-scheduler", "nova-compute")
    up = all(services.get((binary, COMPUTE_HOST)) == "up" for binary in wanted)
    return up and any(conn.compute.hypervisors())


def _volumes_ready(conn: openstack.connection.Connection) -> bool:
    services = {s.binary: s.state for s in conn.block_storage.services()}
    return services.get("cinder-scheduler") == "up" and services.get("cinder-volume") == "up"


def _placement_ready(conn: openstack.connection.Connection) -> bool:
    return any(conn.placement.resource_providers())


def _ports_free(layout: Layout) -> None:
    """Fail at once, naming it, when another program holds the port of an API we are to start."""
    for api in Api:
        name = processes.api_process(layout, api).name
        if processes.running_pid(layout, name) is None and answers(HOST, PORTS[api]):
            raise NotReady(f"port {PORTS[api]} ({name}) is taken by another program")


def _start_and_wait(layout: Layout, creds: credentials.Credentials) -> None:
    _ports_free(layout)
    deadline = time.monotonic() + START_TIMEOUT
    keystone = processes.api_process(layout, Api.KEYSTONE)
    processes.start(layout, keystone)
    _wait(layout, "keystone", lambda: _http_answers(Api.KEYSTONE), [keystone.name], deadline)
    seed.identity(seed.admin_connection(creds), creds)

    others = [processes.api_process(layout, api) for api in Api if api is not Api.KEYSTONE]
    others += [processes.daemon_process(layout, d) for d in Daemon if d is not Daemon.NOVA_COMPUTE]
    for process in others:
        processes.start(layout, process)
    names = [p.name for p in others]
    for api in Api:
        _wait(layout, api.value, lambda api=api: _http_answers(api), names, deadline)  # type: ignore[misc]
    compute = processes.daemon_process(layout, Daemon.NOVA_COMPUTE)
    compute_ran = processes.running_pid(layout, compute.name) is not None
    processes.start(layout, compute)
    names.append(compute.name)

    conn = seed.admin_connection(creds)
    _wait(layout, "nova services and the compute node", lambda: _computes_ready(conn), names, deadline)
    if not compute_ran:  # (a running one was mapped when it started; nova-manage takes seconds to load)
        # Map the compute host into cell1 now rather than at the scheduler's next periodic look.
        subprocess.run(
            [str(layout.bin / "nova-manage"), "--config-file", str(layout.etc / "nova" / "nova.conf"),
             "cell_v2", "discover_hosts"],
            check=True, capture_output=True,
        )
    _wait(layout, "placement's resource provider", lambda: _placement_ready(conn), names, deadline)
    _wait(layout, "cinder-scheduler and cinder-volume", lambda: _volumes_ready(conn), names, deadline)


def running(layout: Layout) -> bool:
    """Whether every process of the cloud is alive."""
    every = [processes.api_process(layout, api).name for api in Api] + [d.value for d in Daemon]
    return all(processes.running_pid(layout, name) is not None for name in every)


def up(layout: Layout, *, log: Callable[[str], None] = print) -> Timings:
    """Install what is missing, start what does not run, wait until it all answers, seed."""
    missing = missing_dependencies(layout)
    if missing:
        raise NotReady(f"the real cloud needs {' and '.join(missing)}")
    timings = Timings()
    layout.data.mkdir(parents=True, exist_ok=True)
    creds = credentials.load_or_make(layout.secrets)

    began = time.monotonic()
    timings.installed_now = install.install(layout)
    install.install_driver(layout)
    timings.install = time.monotonic() - began
    log(f"openstack: venv ready in {timings.install:.0f}s ({layout.venv})")

    began = time.monotonic()
    provision.write_configs(layout, creds)
    timings.synced = [api.value for api in provision.sync_databases(layout, creds)]
    timings.databases = time.monotonic() - began
    log(f"openstack: databases ready in {timings.databases:.0f}s")

    began = time.monotonic()
    _start_and_wait(layout, creds)
    timings.start = time.monotonic() - began
    log(f"openstack: services ready in {timings.start:.0f}s")

    began = time.monotonic()
    seed.resources(seed.admin_connection(creds))
    seed.write_clouds_yaml(layout, creds)
    timings.seed = time.monotonic() - began
    count, mib = processes.rss_mib(layout)
    log(f"openstack: up ({timings.describe()}); {count} processes, {mib:.0f} MiB RSS; {layout.clouds_yaml}")
    return timings


def stop(layout: Layout) -> list[str]:
    return processes.stop_all(layout)


def drop(layout: Layout) -> list[str]:
    """Stop the cloud and drop its databases and state (the venv stays)."""
    stop(layout)
    return provision.drop(layout)
