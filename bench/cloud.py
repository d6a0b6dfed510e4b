"""Ember driving the simulated OpenStack, measured by hand: ``python -m bench.cloud --help``.

It runs the real thing as processes: an embedded PostgreSQL and nats-server (or
the servers ``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL`` name, in a fresh
database and stream prefix), ``ember simcloud`` on that database, ``ember api``
(noauth), one ``ember planner`` and N ``ember worker`` processes. As an admin of
the simulator it first lifts the demo project's Neutron and Cinder quotas. Then,
as a user does, through the REST API: it creates one stack of ``--networks``
networks with a subnet each and ``--servers`` ``OS::Nova::Server``, each on its
own ``OS::Neutron::Port``, spread evenly over the networks; updates it with the
same template (a no-change update); deletes it. Each phase's wall time runs from
the request to the poll (every ``--poll`` s) of ``GET .../stacks/<name>/<id>``
that finds it settled.

The planner and the workers are started afresh for each phase, so each phase's
figures are its own: a worker logs the openstacksdk calls it made, by
``service.method``, when it stops (``cloud calls made``, from
:class:`~libs.cloud.sdk.SdkCaller`), and the peak RSS of every process is read
from ``/proc`` (``VmHWM``; the api's and the simulator's peak is reset at each
phase's start). After the create the simulator must hold the servers, all
ACTIVE, and a port each; after the delete, no server and no port but those the
simulator seeds (devstack's ``router1`` interface is the demo project's). Nothing asserts a time.
"""

from __future__ import annotations

import argparse
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
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import openstack
import orjson
import requests
from openstack.config.loader import OpenStackConfig
from opentelemetry import trace

from bench import engine
from bench.cloud_report import Phase, Tree, calls_logged, tables
from libs.embedded import process
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from libs.simcloud import dev_cloud

PROJECT = "demo"
PHASES = ("create", "update-same", "delete")
STARTUP_TIMEOUT = 120.0
_JSON = {"Content-Type": "application/json"}


@dataclasses.dataclass(frozen=True)
class Options:
    servers: int
    networks: int
    boot_seconds: float
    workers: int
    poll: float
    phase_timeout: float
    keep: bool


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.cloud", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=1000)
    parser.add_argument("--networks", type=int, default=200)
    parser.add_argument("--boot-seconds", type=float, default=5.0, help="the simulator's BUILD time")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between polls of the stack")
    parser.add_argument("--phase-timeout", type=float, default=3600.0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (the services' logs)")
    parser.add_argument("--smoke", action="store_true",
                        help="20 servers, 4 networks, 0.2 s boots, 0.1 s polls (CI)")
    args = parser.parse_args(argv)
    if args.smoke:
        return Options(servers=20, networks=4, boot_seconds=0.2, workers=args.workers, poll=0.1,
                       phase_timeout=120.0, keep=args.keep)
    if args.servers < 1 or not 1 <= args.networks <= 250 * 250:
        parser.error("--servers must be at least 1, --networks 1..62500")
    return Options(servers=args.servers, networks=args.networks, boot_seconds=args.boot_seconds,
                   workers=args.workers, poll=args.poll, phase_timeout=args.phase_timeout, keep=args.keep)


def template(servers: int, networks: int) -> dict[str, Any]:
    """``networks`` networks with a /24 subnet each; server i on its own port on network i mod networks."""
    resources: dict[str, Any] = {}
    for n in range(networks):
        resources[f"net-{n}"] = {"type": "OS::Neutron::Net", "properties": {"name": f"bench-net-{n}"}}
        resources[f"subnet-{n}"] = {"type": "OS::Neutron::Subnet", "properties": {
            "network": {"get_resource": f"net-{n}"}, "cidr": f"10.{1 + n // 250}.{n % 250}.0/24",
            "ip_version": 4}}
    for i in range(servers):
        n = i % networks
        resources[f"port-{i}"] = {"type": "OS::Neutron::Port", "properties": {
            "network": {"get_resource": f"net-{n}"},
            "fixed_ips": [{"subnet": {"get_resource": f"subnet-{n}"}}]}}
        resources[f"server-{i}"] = {"type": "OS::Nova::Server", "properties": {
            "name": f"bench-server-{i}", "image": "cirros", "flavor": "m1.tiny",
            "networks": [{"port": {"get_resource": f"port-{i}"}}]}}
    return {"heat_template_version": "2018-08-31", "resources": resources}


# ---- the simulator -------------------------------------------------------------------------
def _connection(cloud: dev_cloud.DevCloud, entry: str) -> openstack.connection.Connection:
    region = OpenStackConfig(config_files=[str(cloud.clouds_yaml)], load_envvars=False).get_one(entry)
    return openstack.connection.Connection(config=region)


def wait_simulator(cloud: dev_cloud.DevCloud, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT
    # keystoneauth warns on every try before the simulator listens.
    logging.getLogger("keystoneauth").setLevel(logging.ERROR)
    while True:
        process.check_running(proc, log)
        try:
            _connection(cloud, dev_cloud.CLOUD).compute.find_flavor("m1.tiny", ignore_missing=False)
            return
        except Exception:  # not answering yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


def lift_quotas(cloud: dev_cloud.DevCloud) -> None:
    """As the simulator's admin: no limit on the demo project's networks, subnets, ports and volumes."""
    admin = _connection(cloud, dev_cloud.ADMIN_CLOUD)
    identity: Any = admin.identity  # v3 (the simulator's Keystone)
    project = identity.find_project(PROJECT, ignore_missing=False)
    admin.network.update_quota(project.id, networks=-1, subnets=-1, ports=-1)
    answer = admin.block_storage.put(f"/os-quota-sets/{project.id}",
                                     json={"quota_set": {"volumes": -1, "gigabytes": -1}})
    if answer.status_code != 200:
        raise engine.BenchError(f"Cinder's quota update answered {answer.status_code}: {answer.text[:200]}")


def cloud_counts(cloud: dev_cloud.DevCloud) -> tuple[int, int, int]:
    """The demo project's servers, ACTIVE servers and ports, as the simulator lists them."""
    conn = _connection(cloud, dev_cloud.CLOUD)
    servers = list(conn.compute.servers(details=True))
    ports = sum(1 for _ in conn.network.ports())
    return len(servers), sum(1 for s in servers if s.status == "ACTIVE"), ports


# ---- the REST API --------------------------------------------------------------------------
class Api:
    """Heat's REST API as a user calls it (noauth: the path names the project)."""

    def __init__(self, url: str) -> None:
        self.base = f"{url}/v1/{PROJECT}"
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


# ---- one run -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Target:
    api: Api
    name: str
    stack_id: str
    template: Mapping[str, Any]


class Run:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.run_id = uuid.uuid4().hex[:8]
        self.phases: list[Phase] = []
        self.api_calls: collections.Counter[str] = collections.Counter()

    def execute(self) -> None:
        scratch = process.scratch_dir(f"ember-bench-cloud-{self.run_id}-")
        with contextlib.ExitStack() as stack:
            if self.options.keep:
                stack.callback(print, f"kept: {scratch}")
            else:
                stack.callback(shutil.rmtree, scratch, True)
            servers = engine.start_servers(scratch, stack, self.run_id, pg_stats=False)
            asyncio.run(engine.prepare(servers, pg_stats=False))
            if not (servers.own_postgres and servers.own_nats) and not self.options.keep:
                stack.callback(lambda: asyncio.run(engine.drop(servers)))
            logs = scratch / "logs"
            logs.mkdir()
            cloud = dev_cloud.DevCloud("127.0.0.1", process.free_port(), scratch / "clouds.yaml")
            dev_cloud.write(cloud)
            sim_log = logs / "simcloud.log"
            sim = process.spawn([sys.executable, "-m", "libs.cli", *cloud.argv(servers.database_url),
                                 "--boot-seconds", str(self.options.boot_seconds)],
                                log_path=sim_log, cwd=engine.REPO,
                                env={**os.environ, "EMBER_LOG_LEVEL": "WARNING"})
            stack.callback(_stop, sim)
            api_port = process.free_port()
            env = {**os.environ, **cloud.env(), "EMBER_DATABASE_URL": servers.database_url,
                   "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": servers.prefix,
                   "EMBER_DATA_DIR": str(scratch / "data"), "EMBER_API_BIND": f"127.0.0.1:{api_port}",
                   "EMBER_AUTH": "noauth", "EMBER_MAX_RESOURCES_PER_STACK": "-1",
                   "EMBER_MAX_TEMPLATE_SIZE": str(64 << 20), "EMBER_MAX_JSON_BODY_SIZE": str(64 << 20)}
            env.setdefault("EMBER_LOG_LEVEL", "INFO")
            api_log = logs / "api.log"
            api_proc = process.spawn([sys.executable, "-m", "libs.cli", "api"], log_path=api_log, env=env,
                                     cwd=engine.REPO)
            stack.callback(_stop, api_proc)
            wait_simulator(cloud, sim, sim_log)
            lift_quotas(cloud)
            seeded = cloud_counts(cloud)
            api = Api(f"http://127.0.0.1:{api_port}")
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while not api.ready():
                process.check_running(api_proc, api_log)
                if time.monotonic() > deadline:
                    raise engine.BenchError("the api did not answer in time")
                time.sleep(0.2)
            fixed = [Tree("api", api_proc.pid), Tree("simcloud", sim.pid),
                     *(Tree(w.label, w.pid, own_memory=False) for w in servers.watched)]
            tmpl = template(self.options.servers, self.options.networks)
            stack_id = ""
            for phase in PHASES:
                services = engine.Services(env, logs / phase, self.options.workers, 10.0)
                (logs / phase).mkdir()
                stack_id = self._phase(phase, Target(api, f"bench-cloud-{self.run_id}", stack_id, tmpl),
                                       servers, services, fixed)
                self._check(cloud, phase, seeded)
            _stop(api_proc)
            self.api_calls = calls_logged(api_log)

    def _phase(self, phase: str, target: Target, servers: engine.Servers, services: engine.Services,
               fixed: Sequence[Tree]) -> str:
        """One phase with a fresh planner and workers; the stack's id."""
        api, name, stack_id = target.api, target.name, target.stack_id
        try:
            services.start()
            asyncio.run(_ready(servers, services))
            watched = [*fixed, *(Tree(w.label, w.pid) for w in services.watched())]
            for each in fixed:
                each.reset_peak()
            cpu = {w.label: w.cpu_seconds() for w in watched}
            started = time.perf_counter()
            if phase == "create":
                stack_id = api.create(name, target.template)
            elif phase == "update-same":
                api.update(name, stack_id, target.template)
            else:
                api.delete(name, stack_id)
            answered = time.perf_counter() - started
            self._settle(api, name, stack_id, phase, services)
            seconds = time.perf_counter() - started
            peaks = {w.label: w.peak_rss_mb() for w in watched}
            spent = {w.label: _minus(w.cpu_seconds(), cpu[w.label]) for w in watched}
        except BaseException:
            print("\n".join(services.problems()), file=sys.stderr)
            raise
        finally:
            services.stop()
        calls: collections.Counter[str] = collections.Counter()
        for label in services.labels[1:]:
            calls.update(calls_logged(services.log_path(label)))
        self.phases.append(Phase(phase, seconds, answered, calls, peaks, spent))
        print(f"{phase}: {seconds:.1f} s, {sum(calls.values())} openstacksdk calls", flush=True)
        return stack_id

    def _settle(self, api: Api, name: str, stack_id: str, phase: str, services: engine.Services) -> None:
        action = {"create": "CREATE", "update-same": "UPDATE", "delete": "DELETE"}[phase]
        deadline = time.monotonic() + self.options.phase_timeout
        while True:
            status, reason = api.status(name, stack_id)
            if status == f"{action}_COMPLETE":
                return
            if not status.endswith("IN_PROGRESS"):
                raise engine.BenchError(f"{phase}: the stack is {status}: {reason}")
            if time.monotonic() > deadline:
                raise engine.BenchError(f"{phase}: still {status} after {self.options.phase_timeout:g} s")
            services.check_alive()
            time.sleep(self.options.poll)

    def _check(self, cloud: dev_cloud.DevCloud, phase: str, seeded: tuple[int, int, int]) -> None:
        """The stack's servers and ports are in the simulator (and gone after the delete)."""
        counts = zip(cloud_counts(cloud), seeded, strict=True)
        servers, active, ports = (now - before for now, before in counts)
        want = self.options.servers if phase != "delete" else 0
        if servers != want or active != want or ports != want:
            raise engine.BenchError(f"after {phase} the simulator holds {servers} servers ({active} ACTIVE) "
                                    f"and {ports} ports beyond its seeded ones; {want} of each expected")


async def _ready(servers: engine.Servers, services: engine.Services) -> None:
    names = Names(servers.prefix)
    async with Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="bench-cloud") as bus:
        await engine.wait_ready(bus, services)


def _minus(end: float | None, start: float | None) -> float | None:
    return None if end is None or start is None else end - start


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    load = os.getloadavg()
    print(f"bench.cloud: {options.servers} servers on {options.networks} networks (a port each), "
          f"{options.boot_seconds:g} s boots; api, planner, {options.workers} worker(s), simcloud as "
          f"processes; {os.cpu_count()} CPU(s), load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}", flush=True)
    bench = Run(options)
    code = 0
    try:
        bench.execute()
    except engine.BenchError as exc:
        print(f"bench.cloud: FAILED: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except Exception:
        print(f"bench.cloud: FAILED:\n{traceback.format_exc()}", file=sys.stderr)
        code = 1
    print(tables(bench.phases, options.servers))
    if bench.api_calls:
        print(f"\nthe api's own openstacksdk calls (validating the templates, all phases): "
              f"{dict(bench.api_calls)}")
    load = os.getloadavg()
    print(f"\nload at the end: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return code


if __name__ == "__main__":
    sys.exit(main())
