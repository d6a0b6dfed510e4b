"""The convergence engine's throughput, measured by hand: ``python -m bench.engine --help``.

It runs the real thing: an embedded PostgreSQL and nats-server (or the servers
``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL`` name, in a fresh database and a
fresh stream prefix), one ``ember planner`` and N ``ember worker`` processes,
and, for each size, four phases on a layered stack of ``OS::Heat::None``
resources submitted through :mod:`libs.operations` from this process:

* ``create``       the stack;
* ``update-same``  the same template again (a no-change update);
* ``update-all``   a template that changes a property of every resource;
* ``delete``       the stack.

A phase's time runs from the call into :mod:`libs.operations` to the poll
(every 50 ms) that finds the ``stacks`` row settled. Every figure printed is
measured in this run; nothing is estimated. The process tree (services,
profilers, servers) is stopped at the end, on Ctrl-C, SIGTERM and errors too,
and each child also gets a signal from the kernel if this process dies.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import dataclasses
import datetime
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import orjson
from opentelemetry import trace

from libs import config, operations
from libs.db import migrate, stacks
from libs.db.pool import create_pool
from libs.embedded import process
from libs.embedded.nats import EmbeddedNats
from libs.embedded.postgres import EmbeddedPostgres
from libs.messaging.bus import Bus
from libs.messaging.payloads import Probe, ProbeReply, decode
from libs.messaging.subjects import Names
from libs.template import request
from libs.template.limits import Limits

REPO = Path(__file__).resolve().parent.parent
POLL_SECONDS = 0.05
PROJECT = "bench"
PHASES = ("create", "update-same", "update-all", "delete")
ACTION_OF = {"create": "CREATE", "update-same": "UPDATE", "update-all": "UPDATE", "delete": "DELETE"}
TYPES = ("OS::Heat::None", "OS::Heat::TestResource")
READY_TIMEOUT = 120.0
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class BenchError(Exception):
    """A phase failed or the setup did not come up; the message says which and why."""


# ---- options -------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Options:
    sizes: tuple[int, ...]
    workers: int
    layers: int
    edge: str
    resource_type: str
    keep: bool
    smoke: bool
    profile: bool
    profile_rate: int
    pg_stats: bool
    results: Path
    phase_timeout: float


def _sizes(text: str) -> tuple[int, ...]:
    try:
        sizes = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected sizes like 100,1000, got {text!r}") from None
    if not sizes or any(s < 1 for s in sizes):
        raise argparse.ArgumentTypeError(f"expected positive sizes like 100,1000, got {text!r}")
    return sizes


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return int(text)


def parse_args(argv: Sequence[str] | None) -> Options:
    parser = argparse.ArgumentParser(
        prog="python -m bench.engine",
        description="Create, update (no change), update (every resource) and delete layered stacks "
                    "of OS::Heat::None resources through a real planner and real workers; print the "
                    "seconds, resources/s and peak RSS of each phase. EMBER_* variables other than the "
                    "server URLs (e.g. EMBER_WORKER_CONCURRENCY, EMBER_LOG_LEVEL) reach the services.")
    parser.add_argument("--sizes", type=_sizes, default=(100, 1000),
                        help="comma-separated stack sizes in resources (default: 100,1000)")
    parser.add_argument("--workers", type=_positive, default=2, help="ember worker processes (default: 2)")
    parser.add_argument("--layers", type=_positive, default=10,
                        help="dependency layers; each resource of layer k>0 needs one of layer k-1 "
                             "(default: 10)")
    parser.add_argument("--edge", choices=("depends_on", "get_resource"), default="depends_on",
                        help="how a resource names its predecessor (default: depends_on)")
    parser.add_argument("--type", dest="resource_type", choices=TYPES, default=TYPES[0],
                        help="resource type (default: OS::Heat::None, whose property changes Ember, "
                             "like Heat, never applies; TestResource updates in place)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch folder (logs, embedded servers' data), or the database "
                             "and streams on servers given by EMBER_DATABASE_URL / EMBER_NATS_URL")
    parser.add_argument("--smoke", action="store_true",
                        help="the 100-resource case only; exit non-zero on any failure (for CI)")
    parser.add_argument("--profile", action="store_true",
                        help="record the planner and every worker with `py-spy record` during each "
                             "phase, if py-spy is installed (timings are then slower)")
    parser.add_argument("--profile-rate", type=_positive, default=100, help="py-spy samples/s (default 100)")
    parser.add_argument("--pg-stats", action="store_true",
                        help="load pg_stat_statements (restarting the embedded PostgreSQL) and print "
                             "each phase's top statements by execution time, with calls per node")
    parser.add_argument("--results", type=Path, default=REPO / "bench" / "results",
                        help="where --profile writes (default: bench/results, ignored by git)")
    parser.add_argument("--phase-timeout", type=float, default=1800.0,
                        help="seconds a phase may take before it counts as failed (default: 1800)")
    args = parser.parse_args(argv)
    sizes: tuple[int, ...] = args.sizes
    if args.smoke:
        sizes = (100,)
    if args.phase_timeout <= 0:
        parser.error("--phase-timeout must be positive")
    return Options(sizes=sizes, workers=args.workers, layers=args.layers, edge=args.edge,
                   resource_type=args.resource_type, keep=args.keep, smoke=args.smoke,
                   profile=args.profile, profile_rate=args.profile_rate, pg_stats=args.pg_stats,
                   results=args.results,
                   phase_timeout=args.phase_timeout)


# ---- the stack -----------------------------------------------------------------------------
def layer_widths(size: int, layers: int) -> list[int]:
    """``size`` resources in ``layers`` layers (fewer if there are fewer resources), widest first."""
    depth = min(layers, size)
    base, extra = divmod(size, depth)
    return [base + (1 if k < extra else 0) for k in range(depth)]


def resource_name(layer: int, index: int) -> str:
    return f"r{layer}_{index}"


def template(size: int, layers: int, *, value: str, edge: str, resource_type: str) -> dict[str, Any]:
    """Layer 0 depends on nothing; resource i of layer k depends on resource i mod width of layer k-1."""
    widths = layer_widths(size, layers)
    resources: dict[str, Any] = {}
    for layer, width in enumerate(widths):
        for index in range(width):
            body: dict[str, Any] = {"type": resource_type, "properties": {"value": value}}
            if layer:
                parent = resource_name(layer - 1, index % widths[layer - 1])
                if edge == "depends_on":
                    body["depends_on"] = [parent]
                else:
                    body["properties"]["value"] = {"list_join": ["-", [value, {"get_resource": parent}]]}
            resources[resource_name(layer, index)] = body
    return {"heat_template_version": "2016-10-14",
            "description": f"bench.engine: {size} resources in {len(widths)} layers",
            "resources": resources}


def limits_for(tmpl: Mapping[str, Any]) -> Limits:
    """Heat's defaults refuse over 1000 resources and 512 KiB; an operator raises both for large stacks."""
    default = request.DEFAULT_LIMITS
    return dataclasses.replace(default, max_resources_per_stack=-1,
                               max_template_size=max(default.max_template_size, len(str(tmpl)) + 1))


# ---- processes, seen through /proc ---------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the command name (index 0 is field 3, the state)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[1].split()


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields is not None and fields[1] == str(pid):
                found.append(int(entry.name))
    return found


@dataclasses.dataclass(frozen=True)
class Watched:
    """A process whose CPU time (and, for Ember's own processes, peak RSS) each phase reports."""

    label: str
    pid: int
    # A server whose work happens in children (a postmaster and its backends).
    tree: bool = False
    # Whether its peak RSS is reported (Ember's processes; not the servers).
    memory: bool = True

    def cpu_seconds(self) -> float | None:
        fields = _stat(self.pid)
        if fields is None:
            return None
        # utime, stime, then the reaped children's cutime, cstime (fields 14-17).
        ticks = int(fields[11]) + int(fields[12])
        if self.tree:
            ticks += int(fields[13]) + int(fields[14])
            for child in _children(self.pid):
                child_fields = _stat(child)
                if child_fields is not None:
                    ticks += int(child_fields[11]) + int(child_fields[12])
        return ticks / _CLOCK_TICKS

    def peak_rss_mb(self) -> float | None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return None
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return None

    def reset_peak(self) -> bool:
        """Bring VmHWM down to the current RSS (clear_refs "5", Linux 4.0+), so a phase shows its own peak."""
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        except OSError:
            return False
        return True


def _pid_with_argument(needle: str) -> int | None:
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if needle.encode() in argv:
            return int(entry.name)
    return None


# ---- servers -------------------------------------------------------------------------------
def database_url_for(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


@dataclasses.dataclass
class Servers:
    admin_db_url: str
    nats_url: str
    database: str
    prefix: str
    # Which servers this run started (and so removes whole) and which it was given.
    own_postgres: bool
    own_nats: bool
    watched: list[Watched] = dataclasses.field(default_factory=list)

    @property
    def database_url(self) -> str:
        return database_url_for(self.admin_db_url, self.database)


def start_servers(scratch: Path, stack: contextlib.ExitStack, run_id: str, *, pg_stats: bool,
                  fsync: bool = False) -> Servers:
    """Embedded servers (``fsync``: PostgreSQL's, off as in the tests unless asked), or the URLs'."""
    db_url = os.environ.get("EMBER_DATABASE_URL", "").strip()
    nats_url = os.environ.get("EMBER_NATS_URL", "").strip()
    own_postgres, own_nats = not db_url, not nats_url
    watched: list[Watched] = []
    if not db_url:
        pg = EmbeddedPostgres(scratch / "postgres", fsync=fsync)
        stack.callback(pg.stop)
        db_url = pg.start()
        if pg_stats:
            # The library loads only at server start: configure it, then start again.
            asyncio.run(_admin(db_url, "ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'"))
            pg.stop()
            db_url = pg.start()
        assert pg.cluster_dir is not None
        postmaster = int((pg.cluster_dir / "postmaster.pid").read_text().split("\n", 1)[0])
        watched.append(Watched("postgres", postmaster, tree=True, memory=False))
    if not nats_url:
        ns = EmbeddedNats(scratch / "nats")
        stack.callback(ns.stop)
        nats_url = ns.start()
        pid = _pid_with_argument(str(ns.store_dir))
        if pid is not None:
            watched.append(Watched("nats", pid, memory=False))
    return Servers(admin_db_url=db_url, nats_url=nats_url, database=f"ember_bench_{run_id}",
                   prefix=f"bench_{run_id}", own_postgres=own_postgres, own_nats=own_nats, watched=watched)


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def prepare(servers: Servers, *, pg_stats: bool) -> bool:
    """A fresh, migrated database; True when pg_stat_statements answers in it."""
    await _admin(servers.admin_db_url, f'CREATE DATABASE "{servers.database}"')
    await migrate.migrate_url(servers.database_url)
    if not pg_stats:
        return False
    conn = await asyncpg.connect(servers.database_url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        await conn.fetchval("SELECT count(*) FROM pg_stat_statements")
    except asyncpg.PostgresError as exc:
        print(f"bench: no pg_stat_statements ({exc}); running without --pg-stats", flush=True)
        return False
    finally:
        await conn.close()
    return True


async def reset_statements(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        await conn.execute("SELECT pg_stat_statements_reset()")


async def top_statements(pool: asyncpg.Pool, nodes: int, top: int = 12) -> list[str]:
    """This database's statements by total execution time since the last reset."""
    async with pool.acquire() as conn:
        total = await conn.fetchrow(
            "SELECT coalesce(sum(calls), 0) AS calls, coalesce(sum(total_exec_time), 0) AS ms"
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database"
            " WHERE datname = current_database())")
        assert total is not None
        rows = await conn.fetch(
            "SELECT calls, total_exec_time AS ms, rows, query FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " ORDER BY total_exec_time DESC LIMIT $1", top)
    per = max(nodes, 1)
    lines = [f"    {int(total['calls']) / per:.1f} statements per node, "
             f"{float(total['ms']) / 1000:.1f} s executing in all; top by execution time:",
             f"    {'calls/node':>10} {'total s':>8} {'mean us':>8} {'rows/call':>9}  statement"]
    for r in rows:
        calls = int(r["calls"])
        query = " ".join(str(r["query"]).split())
        ms = float(r["ms"])
        lines.append(f"    {calls / per:10.2f} {ms / 1000:8.2f} {1000 * ms / calls:8.0f}"
                     f" {int(r['rows']) / calls:9.1f}  {query[:150]}")
    return lines


async def drop(servers: Servers) -> None:
    """The database and streams this run made on servers it did not start."""
    if not servers.own_postgres:
        await _admin(servers.admin_db_url, f'DROP DATABASE IF EXISTS "{servers.database}" WITH (FORCE)')
    if servers.own_nats:
        return
    names = Names(servers.prefix)
    async with Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="ember-bench") as bus:
        for spec in names.streams:
            with contextlib.suppress(Exception):
                await bus.delete_stream(spec.name)


# ---- Ember's services ----------------------------------------------------------------------
class Services:
    """One planner, N workers and any ``others`` (an observer, a notifier), as real
    ``python -m libs.cli <service>`` processes."""

    def __init__(self, env: Mapping[str, str], log_dir: Path, workers: int, grace: float,
                 others: Sequence[str] = ()) -> None:
        self.env = dict(env)
        self.log_dir = log_dir
        self.labels = ["planner", *(f"worker{i + 1}" for i in range(workers)), *others]
        self.grace = grace
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def log_path(self, label: str) -> Path:
        return self.log_dir / f"{label}.log"

    def start(self) -> None:
        for label in self.labels:
            service = "worker" if label.startswith("worker") else label
            self.procs[label] = process.spawn([sys.executable, "-m", "libs.cli", service],
                                              log_path=self.log_path(label), env=self.env, cwd=REPO)

    def watched(self) -> list[Watched]:
        return [Watched(label, proc.pid) for label, proc in self.procs.items()]

    def check_alive(self) -> None:
        for label, proc in self.procs.items():
            if proc.poll() is not None:
                raise BenchError(f"{label} (pid {proc.pid}) exited with status {proc.returncode}; "
                                 f"last lines of {self.log_path(label)}:\n"
                                 f"{process.log_tail(self.log_path(label))}")

    def log_offsets(self) -> dict[str, int]:
        offsets = {}
        for label in self.labels:
            try:
                offsets[label] = self.log_path(label).stat().st_size
            except OSError:
                offsets[label] = 0
        return offsets

    def outcomes(self, since: Mapping[str, int]) -> collections.Counter[str]:
        """The workers' work-message outcomes logged after ``since`` (the consumer logs one per message at
        INFO): "ack", "nak", "term", and "nak: <reason>" with digits and ids folded."""
        counts: collections.Counter[str] = collections.Counter()
        for label in self.labels:
            if not label.startswith("worker"):
                continue
            with contextlib.suppress(OSError), self.log_path(label).open("rb") as log:
                log.seek(since.get(label, 0))
                for line in log:
                    if b'"outcome":' not in line or b'"kind":"work"' not in line:
                        continue
                    with contextlib.suppress(ValueError):
                        entry = orjson.loads(line)
                        outcome = str(entry.get("outcome"))
                        counts[outcome] += 1
                        if outcome != "ack":
                            counts[f"{outcome}: {_fold(str(entry.get('reason', '')))}"] += 1
        return counts

    def problems(self, lines: int = 5) -> list[str]:
        """The last warning and error lines of each service's log."""
        found = []
        for label in self.labels:
            try:
                text = self.log_path(label).read_text(errors="replace")
            except OSError:
                continue
            bad = [line for line in text.splitlines()
                   if '"level":"error"' in line or '"level":"warning"' in line or "Traceback" in line]
            found += [f"  {label}: {line[:400]}" for line in bad[-lines:]]
        return found

    def stop(self) -> None:
        """SIGTERM (they drain), SIGKILL whatever is left after the grace; every child reaped."""
        running = [p for p in self.procs.values() if p.poll() is None]
        for proc in running:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.grace + 10
        for proc in self.procs.values():
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def wait_ready(bus: Bus, services: Services, timeout: float = READY_TIMEOUT) -> None:
    """Probe the plan and work queues until the planner and every worker has answered one."""
    # The planner and workers answer on the plan and work queues; other services have none.
    want = {proc.pid: label for label, proc in services.procs.items()
            if label == "planner" or label.startswith("worker")}
    answered: set[int] = set()

    deadline = time.monotonic() + timeout
    async with bus.inbox() as inbox:
        while missing := [label for pid, label in want.items() if pid not in answered]:
            services.check_alive()
            if time.monotonic() > deadline:
                raise BenchError(f"no answer from {', '.join(missing)} within {timeout:g}s")
            for label in missing:
                subject = bus.names.plan_probe if label == "planner" else bus.names.work_probe
                probe = Probe(probe_id=uuid.uuid4().hex, reply_to=inbox.subject, expires_at=time.time() + 2)
                await bus.publish(subject, probe)
            await asyncio.sleep(0.25)
            for message in inbox.drain():
                with contextlib.suppress(Exception):
                    reply = decode(message.data)
                    if isinstance(reply, ProbeReply):
                        answered.add(reply.pid)


# ---- py-spy --------------------------------------------------------------------------------
def _fold(reason: str) -> str:
    """A reason with its numbers and ids replaced, so that alike reasons count together."""
    return re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|[0-9]+(\.[0-9]+)?", "#", reason)[:120]


def find_py_spy() -> str | None:
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() else shutil.which("py-spy")


class Profiler:
    """``py-spy record --format raw`` attached to each service for the length of one phase."""

    def __init__(self, binary: str, out_dir: Path, rate: int) -> None:
        self.binary = binary
        self.out_dir = out_dir
        self.rate = rate
        self.running: list[tuple[str, subprocess.Popen[bytes], Path]] = []
        self.outputs: dict[str, list[tuple[str, Path]]] = {}

    def start(self, tag: str, targets: Sequence[Watched], timeout: float = 20.0) -> None:
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for target in targets:
            out = self.out_dir / f"{tag}-{target.label}.txt"
            log = self.out_dir / f"{tag}-{target.label}.log"
            proc = process.spawn([self.binary, "record", "--pid", str(target.pid), "--rate", str(self.rate),
                                  "--format", "raw", "--output", str(out)],
                                 log_path=log, death_signal=signal.SIGINT)
            self.running.append((target.label, proc, log))
            self.outputs.setdefault(tag, []).append((target.label, out))
        deadline = time.monotonic() + timeout
        for label, proc, log in self.running:
            while "Sampling process" not in process.log_tail(log):
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = process.log_tail(log)
                    self.stop()
                    raise BenchError(f"py-spy did not start sampling {label}:\n{tail}")
                time.sleep(0.05)

    def stop(self) -> None:
        for _label, proc, _log in self.running:
            process.stop(proc, signal.SIGINT, timeout=60)
        self.running = []


def summarize_raw(paths: Sequence[Path], top: int = 12) -> list[str]:
    """Top functions by self and by inclusive samples over py-spy raw (collapsed-stack) files."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for path in paths:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            stack, _, count_text = line.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [_function(f) for f in stack.split(";")
                      if not f.startswith(("process ", "thread "))]
            if not frames:
                continue
            total += count
            own[frames[-1]] += count
            for frame in set(frames):
                inclusive[frame] += count
    if not total:
        return ["    (no samples)"]
    # Entry frames (the CLI, the service's main) are in every sample and say nothing.
    ember = [(f, n) for f, n in inclusive.most_common()
             if ("libs/" in f or "services/" in f) and n < 0.99 * total]
    lines = [f"    {total} samples; self:"]
    lines += [f"      {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(top)]
    lines.append("    inclusive (Ember's code):")
    lines += [f"      {100 * n / total:5.1f}%  {f}" for f, n in ember[:top]]
    return lines


def _function(frame: str) -> str:
    """``name (path:line)`` without the line, and with the path cut to the package folder."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("site-packages/", str(REPO) + "/"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{name} ({path})" if path else name


# ---- phases --------------------------------------------------------------------------------
@dataclasses.dataclass
class PhaseResult:
    size: int
    phase: str
    submit_seconds: float
    seconds: float
    nodes: int
    events: int
    resources: str
    peak_rss_mb: dict[str, float | None]
    cpu_seconds: dict[str, float | None]
    # The workers' message outcomes (ack, nak, term, "nak: reason"); empty if they log above INFO.
    outcomes: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)
    statements: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Bench:
    options: Options
    pool: asyncpg.Pool
    bus: Bus
    services: Services
    watched: list[Watched]
    profiler: Profiler | None
    pg_stats: bool
    peaks_reset: bool = True

    async def stack(self, stack_id: uuid.UUID) -> stacks.StackRow:
        async with self.pool.acquire() as conn:
            row = await stacks.get(conn, stack_id)
        if row is None:
            raise BenchError(f"stack {stack_id} has no row")
        return row

    async def settle(self, stack_id: uuid.UUID, action: str, what: str) -> stacks.StackRow:
        deadline = time.monotonic() + self.options.phase_timeout
        while True:
            row = await self.stack(stack_id)
            if row.status != "IN_PROGRESS":
                if row.action != action or row.status != "COMPLETE":
                    raise BenchError(f"{what}: the stack ended {row.stack_status}: {row.status_reason}")
                return row
            self.services.check_alive()
            if time.monotonic() > deadline:
                raise BenchError(f"{what}: still {row.stack_status} after {self.options.phase_timeout:g}s")
            await asyncio.sleep(POLL_SECONDS)

    async def phase(self, size: int, phase: str,
                    submit: Callable[[], Awaitable[uuid.UUID]]) -> tuple[PhaseResult, stacks.StackRow]:
        what = f"{size} resources, {phase}"
        if self.profiler is not None:
            self.profiler.start(f"{size}-{phase}", self.services.watched())
        try:
            for proc in self.watched:
                if proc.memory:
                    self.peaks_reset = proc.reset_peak() and self.peaks_reset
            if self.pg_stats:
                await reset_statements(self.pool)
            offsets = self.services.log_offsets()
            cpu_before = {w.label: w.cpu_seconds() for w in self.watched}
            started = time.monotonic()
            stack_id = await submit()
            submitted = time.monotonic()
            row = await self.settle(stack_id, ACTION_OF[phase], what)
            ended = time.monotonic()
            cpu_after = {w.label: w.cpu_seconds() for w in self.watched}
            rss = {w.label: w.peak_rss_mb() if w.memory else None for w in self.watched}
        finally:
            if self.profiler is not None:
                self.profiler.stop()
        cpu: dict[str, float | None] = {}
        for label, before in cpu_before.items():
            after = cpu_after[label]
            cpu[label] = after - before if before is not None and after is not None else None
        async with self.pool.acquire() as conn:
            nodes = int(await conn.fetchval("SELECT count(*) FROM traversal_nodes WHERE traversal_id = $1",
                                            row.current_traversal))
        # Before the checks below add statements of their own.
        statements = await top_statements(self.pool, nodes) if self.pg_stats else []
        events, states = await self.verify(size, phase, row, what)
        # The last log lines of the phase may trail its end by a moment.
        await asyncio.sleep(0.2)
        outcomes = self.services.outcomes(offsets)
        result = PhaseResult(size=size, phase=phase, submit_seconds=submitted - started,
                             seconds=ended - started, nodes=nodes, events=events, resources=states,
                             peak_rss_mb=rss, cpu_seconds=cpu, outcomes=outcomes, statements=statements)
        return result, row

    async def verify(self, size: int, phase: str, row: stacks.StackRow, what: str) -> tuple[int, str]:
        """The rows agree with what the phase promised; (events, resource states)."""
        async with self.pool.acquire() as conn:
            events = await conn.fetchval("SELECT count(*) FROM events WHERE traversal_id = $1",
                                         row.current_traversal)
            states = await conn.fetch(
                "SELECT action || '_' || status AS state, count(*) AS n,"
                " count(*) FILTER (WHERE template_id IS NOT DISTINCT FROM $2) AS converged"
                " FROM resources WHERE stack_id = $1 GROUP BY 1 ORDER BY 1", row.id, row.template_id)
        counts = {r["state"]: int(r["n"]) for r in states}
        total = sum(counts.values())
        converged = sum(int(r["converged"]) for r in states)
        text = " ".join(f"{state}={n}" for state, n in counts.items()) or "none"
        if phase == "delete":
            if total or row.deleted_at is None:
                raise BenchError(f"{what}: the stack settled but {total} row(s) remain ({text})")
        elif total != size or any(not state.endswith("_COMPLETE") for state in counts):
            raise BenchError(f"{what}: expected {size} COMPLETE resources, found {text}")
        elif phase == "create" and counts != {"CREATE_COMPLETE": size}:
            raise BenchError(f"{what}: expected {size} CREATE_COMPLETE resources, found {text}")
        elif converged != size:
            raise BenchError(f"{what}: only {converged} of {size} rows record the stack's template")
        return int(events), text

    async def size(self, size: int, run_id: str, report: Callable[[PhaseResult], None]) -> None:
        opts = self.options
        name = f"bench-{size}-{run_id}"
        v1 = template(size, opts.layers, value="v1", edge=opts.edge, resource_type=opts.resource_type)
        v2 = template(size, opts.layers, value="v2", edge=opts.edge, resource_type=opts.resource_type)
        limits = limits_for(v2)
        state: dict[str, stacks.StackRow] = {}

        async def create() -> uuid.UUID:
            row = await operations.create_stack(self.pool, self.bus, project=PROJECT, name=name,
                                                stack_request=request.StackRequest(template=v1),
                                                limits=limits)
            return row.id

        def update(tmpl: dict[str, Any]) -> Callable[[], Awaitable[uuid.UUID]]:
            async def submit() -> uuid.UUID:
                row = state["row"]
                await operations.update_stack(self.pool, self.bus, row,
                                              stack_request=request.StackRequest(template=tmpl),
                                              limits=limits)
                return row.id
            return submit

        async def delete() -> uuid.UUID:
            row = state["row"]
            await operations.delete_stack(self.pool, self.bus, row)
            return row.id

        submits = {"create": create, "update-same": update(v1), "update-all": update(v2), "delete": delete}
        for phase in PHASES:
            result, state["row"] = await self.phase(size, phase, submits[phase])
            report(result)


async def run(options: Options, servers: Servers, services: Services, *, run_id: str, pg_stats: bool,
              results: list[PhaseResult], profiler: Profiler | None) -> dict[str, tuple[int, str]]:
    """Every size's four phases; returns the tables' row counts and sizes at the end."""
    names = Names(servers.prefix)
    async with (create_pool(servers.database_url, min_size=1, max_size=4,
                            application_name="ember-bench") as pool,
                Bus.connect(servers.nats_url, names, trace.NoOpTracer(), client_name="ember-bench") as bus):
        await bus.ensure_topology()
        await wait_ready(bus, services)
        watched = [Watched("bench", os.getpid()), *services.watched(), *servers.watched]
        bench = Bench(options, pool, bus, services, watched, profiler, pg_stats)

        def report(result: PhaseResult) -> None:
            results.append(result)
            print(f"  {result.size:>7} {result.phase:<12} {result.seconds:9.2f} s "
                  f"{result.size / result.seconds:9.1f} resources/s   {result.resources}", flush=True)

        for size in options.sizes:
            await bench.size(size, run_id, report)
        if not bench.peaks_reset:
            print("note: /proc/<pid>/clear_refs refused; peak RSS is since each process started",
                  flush=True)
        counts: dict[str, tuple[int, str]] = {}
        async with pool.acquire() as conn:
            for table in ("events", "resources", "traversals", "traversal_nodes", "raw_templates"):
                n = await conn.fetchval(f"SELECT count(*) FROM {table}")
                size_text = await conn.fetchval(f"SELECT pg_size_pretty(pg_total_relation_size('{table}'))")
                counts[table] = (int(n), str(size_text))
        return counts


# ---- report --------------------------------------------------------------------------------
def _mb(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def tables(results: Sequence[PhaseResult], counts: Mapping[str, tuple[int, str]]) -> str:
    if not results:
        return "(no phase completed)"
    labels = list(results[0].peak_rss_mb)
    rss_labels = [label for label in labels if results[0].peak_rss_mb[label] is not None]
    lines = []
    head = (f"{'size':>7}  {'phase':<12}{'submit s':>9}{'total s':>9}{'res/s':>9}{'nodes':>8}{'events':>8}"
            f"{'acks':>8}{'naks':>7}   peak RSS MB: " + " ".join(f"{label:>8}" for label in rss_labels))
    lines += [head, "-" * len(head)]
    for r in results:
        acks = str(r.outcomes["ack"]) if r.outcomes else "-"
        naks = str(r.outcomes["nak"] + r.outcomes["term"]) if r.outcomes else "-"
        lines.append(f"{r.size:>7}  {r.phase:<12}{r.submit_seconds:9.2f}{r.seconds:9.2f}"
                     f"{r.size / r.seconds:9.1f}{r.nodes:8d}{r.events:8d}{acks:>8}{naks:>7}"
                     "                " + " ".join(f"{_mb(r.peak_rss_mb[label]):>8}" for label in rss_labels))
    lines.append("")
    head = f"{'size':>7}  {'phase':<12}  CPU s: " + " ".join(f"{label:>8}" for label in labels)
    lines += [head, "-" * len(head)]
    for r in results:
        lines.append(f"{r.size:>7}  {r.phase:<12}         "
                     + " ".join(f"{_cpu(r.cpu_seconds[label]):>8}" for label in labels))
    lines.append("")
    for r in results:
        reasons = [(k, n) for k, n in r.outcomes.most_common() if ": " in k]
        if reasons:
            lines.append(f"{r.size} {r.phase} naks/terms: " + "; ".join(f"{n}x {k}" for k, n in reasons[:4]))
    lines.append("resources after each phase: " + "; ".join(f"{r.size} {r.phase}: {r.resources}"
                                                            for r in results))
    if counts:
        lines.append("rows at the end: " + ", ".join(f"{table} {n} ({size})"
                                                     for table, (n, size) in counts.items()))
    return "\n".join(lines)


def _git_revision() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                              text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "libs", "services"], cwd=REPO,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + (" (libs/services modified)" if dirty else "")


class Run:
    """One invocation: the tree started, every size measured, the tree stopped, the tables printed."""

    def __init__(self, options: Options, settings: config.Settings) -> None:
        self.options = options
        self.settings = settings
        self.run_id = uuid.uuid4().hex[:8]
        self.results: list[PhaseResult] = []
        self.counts: dict[str, tuple[int, str]] = {}
        self.profiler: Profiler | None = None
        self.failure = ""
        self.problems: list[str] = []
        self.kept = ""
        if options.profile:
            binary = find_py_spy()
            if binary is None:
                print("bench: py-spy is not installed (pip install py-spy); running without --profile",
                      flush=True)
            else:
                stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
                self.profiler = Profiler(binary, options.results / f"{stamp}-{self.run_id}",
                                         options.profile_rate)

    def header(self) -> str:
        o = self.options
        return (f"bench.engine {self.run_id}: sizes {','.join(map(str, o.sizes))}, {o.layers} layers, "
                f"{o.edge}, {o.resource_type}; 1 planner + {o.workers} worker(s), "
                f"EMBER_WORKER_CONCURRENCY={self.settings.worker_concurrency}; "
                f"Python {platform.python_version()}, {os.cpu_count()} CPU(s); revision {_git_revision()}")

    def execute(self) -> int:
        """0 when every phase of every size passed; the process tree is gone when this returns."""
        scratch = process.scratch_dir(f"ember-bench-{self.run_id}-")
        try:
            with contextlib.ExitStack() as stack:
                stack.callback(_remove_scratch, scratch, self.options.keep)
                try:
                    self._measure(scratch, stack)
                finally:
                    # From here on, stopping the tree must not be cut short by a second Ctrl-C.
                    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                        signal.signal(sig, _patience)
        except BenchError as exc:
            self.failure = str(exc)
        except process.EmbeddedServerError as exc:
            self.failure = f"an embedded server did not start: {exc}"
        except KeyboardInterrupt:
            self.failure = "interrupted"
            return 130
        except Exception:
            self.failure = traceback.format_exc()
        return 1 if self.failure else 0

    def _measure(self, scratch: Path, stack: contextlib.ExitStack) -> None:
        servers = start_servers(scratch, stack, self.run_id, pg_stats=self.options.pg_stats)
        print(f"servers: {'embedded' if servers.own_postgres else 'given'} PostgreSQL "
              f"{_without_password(servers.admin_db_url)} (database {servers.database}), "
              f"{'embedded' if servers.own_nats else 'given'} NATS {servers.nats_url} "
              f"(prefix {servers.prefix}); scratch {scratch}", flush=True)
        pg_stats = asyncio.run(prepare(servers, pg_stats=self.options.pg_stats))
        if not self.options.keep and not (servers.own_postgres and servers.own_nats):
            stack.callback(lambda: asyncio.run(drop(servers)))
        env = dict(os.environ)
        env.update({"EMBER_DATABASE_URL": servers.database_url, "EMBER_NATS_URL": servers.nats_url,
                    "EMBER_NATS_PREFIX": servers.prefix, "EMBER_DATA_DIR": str(scratch / "data")})
        services = Services(env, scratch / "logs", self.options.workers, self.settings.shutdown_grace)
        stack.callback(services.stop)
        if self.profiler is not None:
            stack.callback(self.profiler.stop)
        if self.options.keep:
            self.kept = str(scratch)
            if not servers.own_postgres:
                self.kept += f", database {servers.database}"
            if not servers.own_nats:
                self.kept += f", streams {servers.prefix.upper()}_*"
        try:
            services.start()
            self.counts = asyncio.run(run(self.options, servers, services, run_id=self.run_id,
                                          pg_stats=pg_stats, results=self.results, profiler=self.profiler))
        except BaseException:
            self.problems = services.problems()
            raise

    def report(self) -> None:
        print()
        print(tables(self.results, self.counts))
        for result in self.results:
            if result.statements:
                print(f"\n  {result.size} {result.phase}: PostgreSQL (pg_stat_statements; the bench's"
                      " own 50 ms polls included)")
                print("\n".join(result.statements))
        profiler = self.profiler
        if profiler is not None and profiler.outputs:
            print(f"\npy-spy profiles (raw collapsed stacks) in {profiler.out_dir}")
            for tag, outputs in profiler.outputs.items():
                workers = [path for label, path in outputs if label.startswith("worker")]
                planner = [path for label, path in outputs if label == "planner"]
                print(f"  {tag}: workers")
                print("\n".join(summarize_raw(workers)))
                print(f"  {tag}: planner")
                print("\n".join(summarize_raw(planner, top=6)))
        if self.failure:
            if self.problems:
                print("\nwarnings and errors the services logged (the last of each):\n"
                      + "\n".join(self.problems), file=sys.stderr)
            print(f"\nbench: FAILED: {self.failure}", file=sys.stderr)
        if self.kept:
            print(f"\nkept: {self.kept}")


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    # SIGTERM and SIGHUP unwind like Ctrl-C, so the cleanup below stops everything (SIGINT too
    # when a shell started this in the background with SIGINT ignored).
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    try:
        settings = config.load(os.environ)
    except config.ConfigError as exc:
        print(f"bench: bad configuration: {exc}", file=sys.stderr)
        return 2
    bench = Run(options, settings)
    print(bench.header(), flush=True)
    code = bench.execute()
    bench.report()
    return code


def _patience(_sig: int, _frame: object) -> None:
    print("bench: stopping the services and servers, please wait", file=sys.stderr, flush=True)


def _remove_scratch(scratch: Path, keep: bool) -> None:
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return urlunsplit(parts._replace(netloc=netloc))


if __name__ == "__main__":
    sys.exit(main())
