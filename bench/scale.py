"""Big stacks through the REST API, measured by hand: ``python -m bench.scale --help``.

What runs is what ``ember dev`` runs, each as a process: an embedded PostgreSQL
(fsync on, as ``ember dev`` starts it) and nats-server (or the servers
``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL`` name, in a fresh database and stream
prefix), ``ember simcloud``, ``ember api`` (noauth), a planner, ``--workers``
workers, an observer and a notifier, with the limits a big stack needs raised
by configuration (:data:`BIG_STACK`). Through Heat's API, as a user does, each
workload's stack goes through its phases (``bench/scale_shapes.py``): create,
no-change update, update of one resource, (a second no-change update for the
groups), delete. A phase's wall time runs from the request to the poll of
``GET .../stacks/<name>/<id>`` (every ``--poll`` s, as ``openstack stack create
--wait`` polls) that finds it settled; anything but ``<ACTION>_COMPLETE`` fails
the run (exit 1). Before the delete, the latency of stack show, resource show
and one page of the resource and event lists of the stack holding the members.

For each phase it prints the wall time, the time until the notifier had published
its last event (the next phase waits for that), resources/s, the peak RSS of every
service (sampled from /proc while the phase runs, ``bench/scale_report.py``),
the CPU each process spent (which service was busy) and PostgreSQL's database
size after it. Nothing asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import os
import platform
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import asyncpg

from bench import cloud_setup, engine
from bench.cloud_report import Tree
from bench.scale_report import PhaseFigures, ReadFigures, RssSampler, phase_table, read_table
from bench.scale_shapes import Phase, Shape, Workload, phases, resource_name

# What a stack of 10^5..10^6 resources needs raised (the api's and the evaluation's limits);
# each can be given otherwise in the environment.
BIG_STACK = {
    "EMBER_MAX_RESOURCES_PER_STACK": "-1",
    "EMBER_MAX_TEMPLATE_SIZE": str(128 << 20),
    "EMBER_MAX_JSON_BODY_SIZE": str(128 << 20),
    # The api checks a template in an evaluation process under this deadline (5 s by default): a
    # flat 10^5 template takes longer (refused with "Template evaluation took longer than 5 seconds").
    "EMBER_EVALUATION_TIMEOUT": "600",
}
# `ember dev` writes its services' spans to a file; so do these (EMBER_OTEL_EXPORTER=none: not).
DEV_LIKE = {"EMBER_OTEL_EXPORTER": "console"}
OTHERS = ("observer", "notifier")
PAGE = 100
SMOKE_SIZE = 10_000


@dataclasses.dataclass(frozen=True)
class Options:
    workloads: tuple[Workload, ...]
    skip: frozenset[Phase]
    workers: int
    reads: int
    poll: float
    phase_timeout: float
    keep: bool
    # Phases during which py-spy records every Ember service (``bench.engine``'s profiler).
    profile: frozenset[Phase] = frozenset()


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 10000,100000, got {text!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"expected positive sizes like 10000,100000, got {text!r}")
    return sizes


def _phases(text: str) -> frozenset[Phase]:
    try:
        return frozenset(Phase(part.strip()) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected phases among {', '.join(Phase)}, got {text!r}") from None


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--flat", type=_sizes, default=(), help="sizes of a flat template of OS::Heat::None")
    parser.add_argument("--group", type=_sizes, default=(),
                        help="sizes of one ResourceGroup of OS::Heat::None")
    parser.add_argument("--groups", type=_sizes, default=(),
                        help="sizes as groups of 1000 (each a nested stack) in one template")
    parser.add_argument("--skip", type=_phases, default=frozenset(),
                        help=f"phases left out, comma-separated ({', '.join(Phase)}; not create)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reads", type=int, default=5, help="calls of each read timed (0: none)")
    parser.add_argument("--poll", type=float, default=0.25, help="seconds between polls of the stack")
    parser.add_argument("--phase-timeout", type=float, default=3600.0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (logs, data)")
    parser.add_argument("--profile", type=_phases, default=frozenset(),
                        help="phases to record with py-spy (pip install py-spy), e.g. create,delete; "
                             "profiled phases run slower")
    parser.add_argument("--smoke", action="store_true",
                        help=f"flat {SMOKE_SIZE}: create, no-change update, delete (./test.sh)")
    args = parser.parse_args(argv)
    if args.smoke:
        return Options(workloads=(Workload(Shape.FLAT, SMOKE_SIZE),),
                       skip=frozenset({Phase.UPDATE_ONE}), workers=args.workers, reads=0, poll=0.1,
                       phase_timeout=300.0, keep=args.keep)
    if Phase.CREATE in args.skip:
        parser.error("--skip: every other phase needs the create")
    workloads = tuple(Workload(shape, size) for shape, sizes in
                      ((Shape.FLAT, args.flat), (Shape.GROUP, args.group), (Shape.GROUPS, args.groups))
                      for size in sizes) or (Workload(Shape.FLAT, SMOKE_SIZE),)
    if args.workers < 1 or args.reads < 0 or args.poll <= 0:
        parser.error("--workers must be at least 1, --reads at least 0, --poll positive")
    return Options(workloads=workloads, skip=args.skip, workers=args.workers, reads=args.reads,
                   poll=args.poll, phase_timeout=args.phase_timeout, keep=args.keep, profile=args.profile)


async def _fetchval(url: str, query: str) -> Any:
    conn = await asyncpg.connect(url)
    try:
        return await conn.fetchval(query)
    finally:
        await conn.close()


def _database_bytes(url: str) -> int:
    return int(asyncio.run(_fetchval(url, "SELECT pg_database_size(current_database())")))


def _events_unpublished(url: str) -> bool:
    """Whether the notifier's outbox still holds events (a read of its partial index)."""
    return bool(asyncio.run(_fetchval(url, "SELECT EXISTS (SELECT 1 FROM events WHERE NOT published)")))


@dataclasses.dataclass(frozen=True)
class Deployment:
    """What runs: the servers and the api (``setup``), the other services, the processes watched."""

    setup: cloud_setup.Setup
    services: engine.Services
    api: cloud_setup.Api
    # Ember's processes by label (their RSS is sampled), and every process tree whose CPU is read.
    roots: dict[str, int]
    trees: list[Tree]


@dataclasses.dataclass
class Target:
    """The stack a workload made, as the api named it."""

    name: str
    stack_id: str = ""

    def url(self, api: cloud_setup.Api) -> str:
        return f"{api.base}/stacks/{self.name}/{self.stack_id}"


class Run:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.run_id = uuid.uuid4().hex[:8]
        self.figures: list[PhaseFigures] = []
        self.reads: list[ReadFigures] = []
        self.profiler: engine.Profiler | None = None
        if options.profile:
            binary = engine.find_py_spy()
            if binary is None:
                print("bench.scale: py-spy is not installed (pip install py-spy); no --profile", flush=True)
            else:
                stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
                self.profiler = engine.Profiler(binary, engine.REPO / "bench" / "results" /
                                                f"{stamp}-scale-{self.run_id}", 100)

    def execute(self) -> None:
        env = {k: os.environ.get(k, v) for k, v in {**BIG_STACK, **DEV_LIKE}.items()}
        with contextlib.ExitStack() as stack:
            setup = cloud_setup.start(stack, "ember-bench-scale", self.run_id, keep=self.options.keep,
                                      env=env, fsync=True)
            services = engine.Services(setup.env, setup.logs, self.options.workers, 10.0, others=OTHERS)
            stack.callback(services.stop)
            services.start()
            asyncio.run(cloud_setup.services_ready(setup.servers, services))
            roots = {"api": setup.api.pid, "simcloud": setup.sim.pid,
                     **{label: proc.pid for label, proc in services.procs.items()}}
            trees = [*(Tree(label, pid) for label, pid in roots.items()),
                     *(Tree(w.label, w.pid, own_memory=False) for w in setup.servers.watched)]
            deployment = Deployment(setup, services, cloud_setup.Api(setup.api_url), roots, trees)
            for workload in self.options.workloads:
                self._workload(workload, deployment)

    def _workload(self, workload: Workload, deployment: Deployment) -> None:
        api = deployment.api
        target = Target(f"scale-{workload.shape}-{workload.size}-{self.run_id}")
        for phase in phases(workload.shape):
            if phase in self.options.skip:
                continue
            if phase is Phase.DELETE and self.options.reads:
                self._reads(workload, api, target)

            def submit(phase: Phase = phase) -> None:
                if phase is Phase.CREATE:
                    target.stack_id = api.create(target.name, workload.template(phase))
                elif phase is Phase.DELETE:
                    api.delete(target.name, target.stack_id)
                else:
                    api.update(target.name, target.stack_id, workload.template(phase))

            def settle(phase: Phase = phase) -> None:
                self._settle(api, target, phase, deployment.services)

            figures = self._phase(workload, phase, deployment, submit, settle)
            self.figures.append(figures)
            print(f"  {workload.label:<14}{phase:<15}{figures.wall_s:9.2f} s (answered in "
                  f"{figures.answer_s:.2f} s, events out in {figures.events_s:.2f} s), "
                  f"{workload.size / figures.wall_s:8.0f} resources/s, "
                  f"database {figures.database_bytes / 2**20:.0f} MB; {cloud_setup.load()}", flush=True)
            # Printed as it goes, so a run cut short keeps each phase's memory and CPU.
            peaks = ", ".join(f"{label} {peak.own_mb:.0f}" for label, peak in figures.peaks.items())
            spent = ", ".join(f"{label} {cpu:.1f}" for label, cpu in figures.cpu_s.items() if cpu is not None)
            print(f"    peak RSS MiB: {peaks}; CPU s: {spent}", flush=True)
        if Phase.DELETE in self.options.skip and self.options.reads:
            self._reads(workload, api, target)

    def _phase(self, workload: Workload, phase: Phase, deployment: Deployment, submit: Callable[[], None],
               settle: Callable[[], None]) -> PhaseFigures:
        trees = deployment.trees
        profiler = self.profiler if phase in self.options.profile else None
        if profiler is not None:
            profiler.start(f"{workload.shape}-{workload.size}-{phase}",
                           [engine.Watched(label, pid) for label, pid in deployment.roots.items()])
        cpu = {t.label: t.cpu_seconds() for t in trees}
        try:
            with RssSampler(deployment.roots) as sampler:
                started = time.perf_counter()
                submit()
                answered = time.perf_counter() - started
                settle()
                wall = time.perf_counter() - started
                # The next phase starts once this one's events are out, so that each phase's CPU
                # is its own (the notifier trails a big create by many seconds).
                self._drain(deployment)
                events = time.perf_counter() - started
        finally:
            if profiler is not None:
                profiler.stop()
        spent = {t.label: _minus(t.cpu_seconds(), cpu[t.label]) for t in trees}
        size = _database_bytes(deployment.setup.servers.database_url)
        return PhaseFigures(workload.label, str(phase), workload.size, answered, wall, events, size,
                            sampler.peaks(), spent)

    def _settle(self, api: cloud_setup.Api, target: Target, phase: Phase, services: engine.Services) -> None:
        deadline = time.monotonic() + self.options.phase_timeout
        while True:
            status, reason = api.status(target.name, target.stack_id)
            if status == f"{phase.action}_COMPLETE":
                return
            if not status.endswith("IN_PROGRESS"):
                raise engine.BenchError(f"{target.name} {phase}: the stack is {status}: {reason}")
            if time.monotonic() > deadline:
                raise engine.BenchError(f"{target.name} {phase}: still {status} after "
                                        f"{self.options.phase_timeout:g} s")
            services.check_alive()
            time.sleep(self.options.poll)

    def _drain(self, deployment: Deployment) -> None:
        deadline = time.monotonic() + self.options.phase_timeout
        while _events_unpublished(deployment.setup.servers.database_url):
            if time.monotonic() > deadline:
                raise engine.BenchError(f"events still unpublished {self.options.phase_timeout:g} s after "
                                        "the phase's stack settled")
            deployment.services.check_alive()
            time.sleep(min(self.options.poll, 0.2))

    # ---- reads on the big stack ----------------------------------------------------------
    def _reads(self, workload: Workload, api: cloud_setup.Api, target: Target) -> None:
        top = target.url(api)
        members, member = top, resource_name(0)
        group = workload.members_stack()
        if group is not None:
            links = _get(api, f"{top}/resources/{group}")["resource"]["links"]
            members = next(str(link["href"]) for link in links if link["rel"] == "nested")
            member = "0"
        self._time(workload, "stack show", api, top)
        where = "" if group is None else " (a group's stack)"
        self._time(workload, f"resource show{where}", api, f"{members}/resources/{member}")
        paged = api.http.get(f"{members}/resources", params={"limit": PAGE}, timeout=600)
        if paged.status_code == 400:  # no paging of resources (Heat has none): the whole list
            self._time(workload, f"resource list, whole{where}", api, f"{members}/resources", "resources")
        else:
            self._time(workload, f"resource list, {PAGE}{where}", api, f"{members}/resources?limit={PAGE}",
                       "resources")
        self._time(workload, f"event list, {PAGE}{where}", api, f"{members}/events?limit={PAGE}", "events")

    def _time(self, workload: Workload, what: str, api: cloud_setup.Api, url: str, listed: str = "") -> None:
        seconds, rows = [], None
        for _ in range(self.options.reads):
            started = time.perf_counter()
            body = _get(api, url)
            seconds.append(time.perf_counter() - started)
            rows = len(body[listed]) if listed else None
        figures = ReadFigures(workload.label, what, tuple(seconds), rows)
        self.reads.append(figures)
        print(read_table([figures]).splitlines()[-1], flush=True)


def _get(api: cloud_setup.Api, url: str) -> dict[str, Any]:
    answer = api.http.get(url, timeout=600)
    if answer.status_code != 200:
        raise engine.BenchError(f"GET {url}: {answer.status_code} {answer.text[:300]}")
    body: dict[str, Any] = answer.json()
    return body


def _minus(end: float | None, begin: float | None) -> float | None:
    return None if end is None or begin is None else end - begin


def header(options: Options) -> str:
    limits = " ".join(f"{k}={os.environ.get(k, v)}" for k, v in BIG_STACK.items())
    return (f"bench.scale: {', '.join(w.label for w in options.workloads)}; api, planner, "
            f"{options.workers} worker(s), {', '.join(OTHERS)}, simcloud as processes; {limits}; "
            f"Python {platform.python_version()}, {os.cpu_count()} CPU(s); revision "
            f"{engine._git_revision()}; {cloud_setup.load()}")


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    print(header(options), flush=True)
    bench = Run(options)
    code = cloud_setup.guarded("bench.scale", bench.execute)
    print()
    print(phase_table(bench.figures))
    if bench.reads:
        print()
        print(read_table(bench.reads))
    if bench.profiler is not None:
        print(profiles(bench.profiler))
    print(f"\n{cloud_setup.load()} at the end")
    return code


def profiles(profiler: engine.Profiler) -> str:
    """Each profiled phase's top functions, per service (the workers together)."""
    lines = [f"\npy-spy profiles (raw collapsed stacks) in {profiler.out_dir}"]
    for tag, outputs in profiler.outputs.items():
        services = sorted({"worker" if label.startswith("worker") else label for label, _ in outputs})
        for service in services:
            paths = [path for label, path in outputs
                     if label == service or (service == "worker" and label.startswith("worker"))]
            lines.append(f"  {tag}: {service}")
            lines += engine.summarize_raw(paths, top=8)
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
