"""The observer over many servers, measured by hand: ``python -m bench.observer --help``.

Everything runs as processes, as ``bench.cloud`` starts them (:mod:`bench.cloud_setup`):
an embedded PostgreSQL and nats-server (or ``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL``'s),
``ember simcloud`` and ``ember api`` (noauth). In the simulator the bench makes
``--projects`` cloud projects, each with the member role of the user Ember's
``clouds.yaml`` entry logs in as, and maps Ember project ``obsNN`` to cloud project
``bench-obsNN`` (``EMBER_CLOUD_PROJECTS``). Then, as a user does, through the REST
API: one stack per project, an ``OS::Heat::ResourceGroup`` of ``OS::Nova::Server`` on
no network (``allocate_network: none``; nothing else to make and no Neutron quota
to lift), ``--servers`` in all, made by a planner and ``--workers`` workers, timed
from the first request to the poll that finds the last stack ``CREATE_COMPLETE``.

The planner and workers are stopped; ``--observers`` ``ember observer`` processes
start with ``EMBER_OBSERVE_INTERVAL=--interval``. For each pass an observer logs
(compared, projects, list calls, drift opened, its seconds) the bench prints the
observer's CPU and peak RSS since its previous pass line, the simulator's and
PostgreSQL's CPU and the requests the simulator answered since the previous pass
line of any observer (:mod:`bench.observer_watch` says how they are counted). After
``--passes`` passes of each, none of which may open drift, the bench deletes
``--delete-percent`` of the servers through openstacksdk, behind Ember's back, and
waits until ``GET .../stacks/<group's nested stack>/drift`` lists one ``gone``
record for each of them, and for one more pass, which must open none. It prints
the time from the last delete to the records listed. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import os
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

import asyncpg

from bench import engine
from bench.cloud_report import Phase, Tree, calls_logged, tables
from bench.cloud_setup import Api, Setup, connection, guarded, load, measured, start, stop
from bench.observer_report import (
    cloud_projects,
    intervals_table,
    member_of,
    project_names,
    spread,
    steady_summary,
    template,
)
from bench.observer_watch import RequestCounter, Watcher
from libs.embedded import process
from libs.simcloud import dev_cloud, seeds

PAGE = 1000  # the simulator's largest page


@dataclasses.dataclass(frozen=True)
class Options:
    servers: int
    projects: int
    observers: int
    interval: float
    passes: int
    delete_percent: float
    boot_seconds: float
    workers: int
    poll: float
    phase_timeout: float
    keep: bool


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.observer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=10_000, help="servers in all (default 10000)")
    parser.add_argument("--projects", type=int, default=10, help="cloud projects, a stack each (default 10)")
    parser.add_argument("--observers", type=int, default=1, help="ember observer processes (default 1)")
    parser.add_argument("--interval", type=float, default=10.0, help="EMBER_OBSERVE_INTERVAL (default 10)")
    parser.add_argument("--passes", type=int, default=3, help="passes of each observer before the deletes")
    parser.add_argument("--delete-percent", type=float, default=1.0,
                        help="share of the servers deleted behind Ember's back (default 1)")
    parser.add_argument("--boot-seconds", type=float, default=0.0, help="the simulator's BUILD time")
    parser.add_argument("--workers", type=int, default=2, help="ember worker processes for the create")
    parser.add_argument("--poll", type=float, default=1.0, help="seconds between polls of the stacks")
    parser.add_argument("--phase-timeout", type=float, default=3600.0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (the services' logs)")
    parser.add_argument("--smoke", action="store_true",
                        help="2 projects of 10 servers, 1 s interval, 2 passes (CI); exits 1 on failure")
    args = parser.parse_args(argv)
    if args.smoke:
        return Options(servers=20, projects=2, observers=args.observers, interval=1.0, passes=2,
                       delete_percent=args.delete_percent, boot_seconds=0.0, workers=args.workers, poll=0.2,
                       phase_timeout=120.0, keep=args.keep)
    if not 1 <= args.projects <= args.servers:
        parser.error("--projects must be at least 1 and at most --servers")
    if args.observers < 1 or args.passes < 1 or args.workers < 1:
        parser.error("--observers, --passes and --workers must be at least 1")
    if args.interval < 0.1 or not 0 < args.delete_percent <= 100:
        parser.error("--interval must be at least 0.1 and --delete-percent in (0, 100]")
    return Options(servers=args.servers, projects=args.projects, observers=args.observers,
                   interval=args.interval, passes=args.passes, delete_percent=args.delete_percent,
                   boot_seconds=args.boot_seconds, workers=args.workers, poll=args.poll,
                   phase_timeout=args.phase_timeout, keep=args.keep)


def deletions(servers: int, percent: float) -> int:
    """How many servers are deleted behind Ember's back: ``percent`` of them, at least one."""
    return max(1, round(servers * percent / 100))


class GroupApi(Api):
    """The REST API of one project, with what this bench reads beyond ``bench.cloud``'s."""

    def nested(self, name: str, stack_id: str, resource: str) -> tuple[str, str]:
        """The name and id of the stack ``resource`` nests (its ``nested`` link)."""
        answer = self.http.get(f"{self.base}/stacks/{name}/{stack_id}/resources/{resource}", timeout=60)
        for link in self._expect(answer, 200).json()["resource"]["links"]:
            if link["rel"] == "nested":
                nested_name, nested_id = str(link["href"]).rstrip("/").split("/")[-2:]
                return nested_name, nested_id
        raise engine.BenchError(f"{name}'s {resource} names no nested stack")

    def drift(self, name: str, stack_id: str) -> list[dict[str, Any]]:
        answer = self.http.get(f"{self.base}/stacks/{name}/{stack_id}/drift", timeout=60)
        found: list[dict[str, Any]] = self._expect(answer, 200).json()["drift"]
        return found


@dataclasses.dataclass(frozen=True)
class Group:
    """A project's stack: its API, the stack, the cloud project, its servers' name prefix."""

    api: GroupApi
    name: str
    stack_id: str
    cloud_project: str
    cloud_project_id: str
    servers: int

    @property
    def prefix(self) -> str:
        return f"{self.name}-server"


async def _member_projects(database_url: str, names: Sequence[str]) -> list[str]:
    conn = await asyncpg.connect(database_url)
    try:
        return [await seeds.member_project(conn, name, "demo") for name in names]  # clouds.yaml's user
    finally:
        await conn.close()


def listed_servers(cloud: dev_cloud.DevCloud) -> list[dict[str, Any]]:
    """Every project's servers, as raw pages of the admin's listing (openstacksdk's objects cost more)."""
    admin = connection(cloud, dev_cloud.ADMIN_CLOUD)
    found: list[dict[str, Any]] = []
    while True:
        marker = f"&marker={found[-1]['id']}" if found else ""
        page = admin.compute.get(f"/servers/detail?all_tenants=1&limit={PAGE}{marker}").json()["servers"]
        found += page
        if len(page) < PAGE:
            return found


class Run:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.run_id = uuid.uuid4().hex[:8]
        self.created: Phase | None = None
        self.watcher: Watcher | None = None
        self.calls: collections.Counter[str] = collections.Counter()
        self.report: list[str] = []

    def say(self, line: str) -> None:
        print(line, flush=True)
        self.report.append(line)

    def execute(self) -> None:
        pairs = project_names(self.options.projects)
        with contextlib.ExitStack() as stack:
            setup = start(stack, "ember-bench-observer", self.run_id, keep=self.options.keep,
                          sim_args=["--boot-seconds", str(self.options.boot_seconds)],
                          env={"EMBER_CLOUD_PROJECTS": cloud_projects(pairs, dev_cloud.CLOUD),
                               "EMBER_LOG_FORMAT": "json"})
            ids = asyncio.run(_member_projects(setup.servers.database_url, [c for _, c in pairs]))
            counts = spread(self.options.servers, len(pairs))
            groups = self._create(setup, [(p, c, i, n)
                                          for (p, c), i, n in zip(pairs, ids, counts, strict=True)])
            victims = self._check(setup, groups)
            self._observe(stack, setup, groups, victims)

    def _create(self, setup: Setup, projects: Sequence[tuple[str, str, str, int]]) -> list[Group]:
        """One group stack per project, made by a fresh planner and workers, stopped after."""
        services = engine.Services(setup.env, setup.logs / "create", self.options.workers, 10.0)
        (setup.logs / "create").mkdir()
        fixed = [Tree("api", setup.api.pid), Tree("simcloud", setup.sim.pid),
                 *(Tree(w.label, w.pid, own_memory=False) for w in setup.servers.watched)]
        groups: list[Group] = []
        finished: list[float] = []
        began = [0.0]

        def submit() -> None:
            began[0] = time.perf_counter()
            for project, cloud_project, cloud_project_id, count in projects:
                api = GroupApi(setup.api_url, project)
                name = f"{project}-group"
                stack_id = api.create(name, template(count, f"{name}-server"))
                groups.append(Group(api, name, stack_id, cloud_project, cloud_project_id, count))

        self.created = measured("create", setup.servers, services, fixed, submit=submit,
                                settle=lambda: finished.extend(self._settle(groups, services, began[0])))
        seconds, calls = self.created.seconds, self.created.calls
        self.say(f"create: {self.options.servers} servers in {len(groups)} stacks through the API: "
                 f"{seconds:.1f} s ({self.options.servers / seconds:.1f} servers/s; the stacks done after "
                 f"{min(finished):.1f}-{max(finished):.1f} s), {sum(calls.values())} openstacksdk calls")
        return groups

    def _settle(self, groups: Sequence[Group], services: engine.Services, started: float) -> list[float]:
        """Seconds from ``started`` until each stack was found ``CREATE_COMPLETE``."""
        done: dict[int, float] = {}
        deadline = time.monotonic() + self.options.phase_timeout
        while len(done) < len(groups):
            for index, group in enumerate(groups):
                if index in done:
                    continue
                status, reason = group.api.status(group.name, group.stack_id)
                if status == "CREATE_COMPLETE":
                    done[index] = time.perf_counter() - started
                elif not status.endswith("IN_PROGRESS"):
                    raise engine.BenchError(f"stack {group.name} is {status}: {reason}")
            if len(done) < len(groups):
                if time.monotonic() > deadline:
                    raise engine.BenchError(f"{len(groups) - len(done)} stack(s) not made in "
                                            f"{self.options.phase_timeout:g} s")
                services.check_alive()
                time.sleep(self.options.poll)
        return [done[i] for i in range(len(groups))]

    def _check(self, setup: Setup, groups: Sequence[Group]) -> dict[str, list[tuple[str, str]]]:
        """Each cloud project holds its group's servers, all ACTIVE; the (id, member) pairs to delete."""
        by_project: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
        for server in listed_servers(setup.cloud):
            by_project[str(server.get("tenant_id"))].append(server)
        counts = spread(deletions(self.options.servers, self.options.delete_percent), len(groups))
        victims: dict[str, list[tuple[str, str]]] = {}
        for group, count in zip(groups, counts, strict=True):
            held = by_project[group.cloud_project_id]
            members = sorted((int(m), str(s["id"])) for s in held if s.get("status") == "ACTIVE"
                             and (m := member_of(str(s.get("name")), group.prefix)) is not None)
            if len(members) != group.servers or len(held) != group.servers:
                raise engine.BenchError(f"{group.cloud_project} holds {len(held)} servers, {len(members)} of"
                                        f" them ACTIVE members of {group.name}; {group.servers} expected")
            step = len(members) / count if count else 1
            victims[group.name] = [(members[int(k * step)][1], str(members[int(k * step)][0]))
                                   for k in range(count)]
        return victims

    def _observe(self, stack: contextlib.ExitStack, setup: Setup, groups: Sequence[Group],
                 victims: dict[str, list[tuple[str, str]]]) -> None:
        options = self.options
        env = {**setup.env, "EMBER_OBSERVE_INTERVAL": f"{options.interval:g}", "EMBER_LOG_LEVEL": "INFO"}
        counter = RequestCounter(setup.cloud.url)
        procs = {}
        for n in range(options.observers):
            label = f"observer{n + 1}"
            procs[label] = process.spawn([sys.executable, "-m", "libs.cli", "observer"],
                                         log_path=setup.logs / f"{label}.log", env=env, cwd=engine.REPO)
            stack.callback(stop, procs[label])
        shared = [Tree("simcloud", setup.sim.pid), *(Tree(w.label, w.pid, own_memory=False)
                                                     for w in setup.servers.watched if w.label == "postgres")]
        watch = self.watcher = Watcher(procs, setup.logs, shared, counter)
        # A pass takes its time: its CPU, the listing's pages; the intervals are jittered +-10%.
        patience = options.phase_timeout
        try:
            watch.wait(lambda: all(len(watch.passes(label)) >= options.passes for label in procs), patience,
                       f"{options.passes} passes of each observer")
            if any(i.line.opened or i.line.closed for i in watch.intervals):
                raise engine.BenchError("drift was opened or closed while nothing changed")
            self._drift(watch, groups, victims, setup.cloud, patience)
        finally:
            for proc in procs.values():
                stop(proc)
            for label in procs:
                self.calls.update(calls_logged(watch.logs[label]))
        if watch.problems:
            raise engine.BenchError("the observers logged warnings: " + "; ".join(watch.problems[-5:]))

    def _drift(self, watch: Watcher, groups: Sequence[Group], victims: dict[str, list[tuple[str, str]]],
               cloud: dev_cloud.DevCloud, patience: float) -> None:
        """Servers deleted behind Ember's back right after a pass; each a ``gone`` record, once."""
        nested = {g.name: g.api.nested(g.name, g.stack_id, "servers") for g in groups}
        sdk = {g.name: connection(cloud, dev_cloud.CLOUD, project=g.cloud_project) for g in groups}
        expected = sum(len(v) for v in victims.values())

        def delete() -> None:
            for each in sdk.values():
                each.authorize()  # the token first: the deletes alone are timed
            began = time.perf_counter()
            for name, pairs in victims.items():
                for server_id, _member in pairs:
                    sdk[name].compute.delete_server(server_id)
            took = time.perf_counter() - began
            self.say(f"deleted {expected} servers through openstacksdk in {took:.2f} s")

        watch.next_pass(patience)
        watch.note = "after the deletes"
        mark = len(watch.intervals)
        watch.mine(delete)
        deleted = time.perf_counter()
        listed_after: float | None = None
        last_look = 0.0
        deadline = time.monotonic() + patience
        while listed_after is None or watch.opened(mark) < expected:
            watch.poll()
            if listed_after is None and time.monotonic() - last_look >= 0.25:
                last_look = time.monotonic()
                if sum(len(g.api.drift(*nested[g.name])) for g in groups) >= expected:
                    listed_after = time.perf_counter() - deleted
            if time.monotonic() > deadline:
                raise engine.BenchError(f"{watch.opened(mark)} drift record(s) opened of {expected} "
                                        f"within {patience:g} s")
            time.sleep(0.05)
        ends = len(watch.intervals)
        watch.note = "one more"
        watch.wait(lambda: all(watch.passes(label, ends) for label in watch.procs), patience, "later pass")
        if watch.opened(mark) != expected:
            raise engine.BenchError(f"{watch.opened(mark)} drift records opened, {expected} servers deleted")
        for group in groups:
            records = group.api.drift(*nested[group.name])
            want = sorted(member for _id, member in victims[group.name])
            got = sorted(str(r["resource_name"]) for r in records)
            if got != want or any(r["kind"] != "gone" or r["resolved_at"] is not None for r in records):
                raise engine.BenchError(f"{group.name}'s drift: {records[:5]}...; open 'gone' records of "
                                        f"members {want[:10]}... expected")
        reported = [i for i in watch.intervals[mark:] if i.line.opened]
        self.say(f"drift: {expected} 'gone' record(s) listed by the API {listed_after:.2f} s after the last "
                 f"delete, opened by pass(es) {', '.join(f'{i.observer}#{i.number}' for i in reported)}; "
                 "none by the pass after")


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    print(f"bench.observer: {options.servers} servers in {options.projects} cloud projects, "
          f"{options.observers} observer(s) every {options.interval:g} s, {options.passes} passes; "
          f"revision {engine._git_revision()}; {os.cpu_count()} CPU(s), {load()}", flush=True)
    bench = Run(options)
    code = guarded("bench.observer", bench.execute)
    if bench.created is not None:
        print(tables([bench.created], options.servers))
    if bench.watcher is not None and bench.watcher.intervals:
        print("\nthe observers' passes (CPU s and MiB: the observer's since its previous pass line; sim and "
              "db CPU s, requests and pages: the simulator's and PostgreSQL's since the previous pass line "
              "of any observer):")
        print(intervals_table(bench.watcher.intervals))
        print(steady_summary(bench.watcher.intervals))
    if bench.calls:
        print(f"the observers' openstacksdk calls (all passes): {dict(bench.calls)}")
    print("\n".join(["", *bench.report, f"{load()} at the end"]))
    return code


if __name__ == "__main__":
    sys.exit(main())
