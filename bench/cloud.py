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
import collections
import contextlib
import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from bench import engine
from bench.cloud_report import Phase, Tree, calls_logged, tables
from bench.cloud_setup import PROJECT, Api, connection, guarded, load, measured, start, stop
from libs.simcloud import dev_cloud

PHASES = ("create", "update-same", "delete")


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
def lift_quotas(cloud: dev_cloud.DevCloud) -> None:
    """As the simulator's admin: no limit on the demo project's networks, subnets, ports and volumes."""
    admin = connection(cloud, dev_cloud.ADMIN_CLOUD)
    identity: Any = admin.identity  # v3 (the simulator's Keystone)
    project = identity.find_project(PROJECT, ignore_missing=False)
    admin.network.update_quota(project.id, networks=-1, subnets=-1, ports=-1)
    answer = admin.block_storage.put(f"/os-quota-sets/{project.id}",
                                     json={"quota_set": {"volumes": -1, "gigabytes": -1}})
    if answer.status_code != 200:
        raise engine.BenchError(f"Cinder's quota update answered {answer.status_code}: {answer.text[:200]}")


def cloud_counts(cloud: dev_cloud.DevCloud) -> tuple[int, int, int]:
    """The demo project's servers, ACTIVE servers and ports, as the simulator lists them."""
    conn = connection(cloud, dev_cloud.CLOUD)
    servers = list(conn.compute.servers(details=True))
    ports = sum(1 for _ in conn.network.ports())
    return len(servers), sum(1 for s in servers if s.status == "ACTIVE"), ports


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
        with contextlib.ExitStack() as stack:
            setup = start(stack, "ember-bench-cloud", self.run_id, keep=self.options.keep,
                          sim_args=["--boot-seconds", str(self.options.boot_seconds)])
            lift_quotas(setup.cloud)
            seeded = cloud_counts(setup.cloud)
            cloud, servers, env, logs, api_proc = setup.cloud, setup.servers, setup.env, setup.logs, setup.api
            api = Api(setup.api_url)
            fixed = [Tree("api", api_proc.pid), Tree("simcloud", setup.sim.pid),
                     *(Tree(w.label, w.pid, own_memory=False) for w in servers.watched)]
            tmpl = template(self.options.servers, self.options.networks)
            stack_id = ""
            for phase in PHASES:
                services = engine.Services(env, logs / phase, self.options.workers, 10.0)
                (logs / phase).mkdir()
                stack_id = self._phase(phase, Target(api, f"bench-cloud-{self.run_id}", stack_id, tmpl),
                                       servers, services, fixed)
                self._check(cloud, phase, seeded)
            stop(api_proc)
            self.api_calls = calls_logged(setup.api_log)

    def _phase(self, phase: str, target: Target, servers: engine.Servers, services: engine.Services,
               fixed: Sequence[Tree]) -> str:
        """One phase with a fresh planner and workers; the stack's id."""
        api, name = target.api, target.name
        made = [target.stack_id]

        def submit() -> None:
            if phase == "create":
                made[0] = api.create(name, target.template)
            elif phase == "update-same":
                api.update(name, made[0], target.template)
            else:
                api.delete(name, made[0])

        done = measured(phase, servers, services, fixed, submit=submit,
                        settle=lambda: self._settle(api, name, made[0], phase, services))
        self.phases.append(done)
        print(f"{phase}: {done.seconds:.1f} s, {sum(done.calls.values())} openstacksdk calls", flush=True)
        return made[0]

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


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    print(f"bench.cloud: {options.servers} servers on {options.networks} networks (a port each), "
          f"{options.boot_seconds:g} s boots; api, planner, {options.workers} worker(s), simcloud as "
          f"processes; {os.cpu_count()} CPU(s), {load()}", flush=True)
    bench = Run(options)
    code = guarded("bench.cloud", bench.execute)
    print(tables(bench.phases, options.servers))
    if bench.api_calls:
        print(f"\nthe api's own openstacksdk calls (validating the templates, all phases): "
              f"{dict(bench.api_calls)}")
    print(f"\n{load()} at the end")
    return code


if __name__ == "__main__":
    sys.exit(main())
