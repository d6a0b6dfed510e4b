"""What ``bench.cloud`` measured in a phase, and its tables."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
from collections.abc import Sequence
from pathlib import Path

import orjson

from bench import engine


@dataclasses.dataclass(frozen=True)
class Tree:
    """A process and its descendants (a service's evaluation processes, a postmaster's backends)."""

    label: str
    pid: int
    # Whether its peak RSS is reported (not for the database and NATS servers).
    own_memory: bool = True

    def pids(self) -> list[int]:
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += engine._children(pid)  # bench.engine's /proc reading
        return found

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the tree's live processes and of the children the root reaped."""
        root = engine._stat(self.pid)
        if root is None:
            return None
        ticks = int(root[13]) + int(root[14])  # cutime, cstime
        for pid in self.pids():
            fields = engine._stat(pid)
            if fields is not None:
                ticks += int(fields[11]) + int(fields[12])  # utime, stime
        return ticks / engine._CLOCK_TICKS

    def peak_rss_mb(self) -> float | None:
        """The process's own peak (VmHWM), not its descendants'."""
        return engine.Watched(self.label, self.pid).peak_rss_mb() if self.own_memory else None

    def reset_peak(self) -> None:
        for pid in self.pids():
            engine.Watched(self.label, pid).reset_peak()


@dataclasses.dataclass(frozen=True)
class Phase:
    name: str
    seconds: float
    # Until the api answered the request (create, update or delete).
    answered: float
    # openstacksdk calls by service.method, as the workers' SdkCaller counted them.
    calls: collections.Counter[str]
    # By process: peak RSS (VmHWM) during the phase, and CPU seconds (user + system) spent in it.
    peak_mb: dict[str, float | None]
    cpu_s: dict[str, float | None]


def calls_logged(log: Path) -> collections.Counter[str]:
    """The ``calls_made`` of a worker's ``cloud calls made`` line (logged when it stops)."""
    found: collections.Counter[str] = collections.Counter()
    with contextlib.suppress(OSError), log.open("rb") as lines:
        for line in lines:
            if b'"calls_made"' in line:
                with contextlib.suppress(ValueError):
                    found.update(orjson.loads(line)["calls_made"])
    return found


def minus(end: float | None, begin: float | None) -> float | None:
    """A difference of two readings, either of which may be missing (a process gone)."""
    return None if end is None or begin is None else end - begin


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def tables(phases: Sequence[Phase], servers: int) -> str:
    lines = ["", f"{'phase':<12} {'wall s':>8} {'answer s':>8} {'servers/s':>9} {'sdk calls':>9}"
                 f" {'per server':>10}"]
    for p in phases:
        total = sum(p.calls.values())
        rate = servers / p.seconds
        lines.append(f"{p.name:<12} {p.seconds:8.1f} {p.answered:8.1f} {rate:9.1f} {total:9d}"
                     f" {total / servers:10.2f}")
    lines += ["", "openstacksdk calls per server, by service.method (counted by the workers' SdkCaller):",
              f"{'call':<34}" + "".join(f"{p.name:>12}" for p in phases)]
    for method in sorted({m for p in phases for m in p.calls}):
        lines.append(f"{method:<34}" + "".join(f"{p.calls[method] / servers:12.2f}" for p in phases))
    labels = list(dict.fromkeys(label for p in phases for label in p.peak_mb))
    lines += ["", "peak RSS MiB (the process's own VmHWM during the phase) / CPU s spent in the phase"
                  " (with its descendants: evaluation processes, PostgreSQL's backends):",
              f"{'process':<12}" + "".join(f"{p.name:>16}" for p in phases)]
    for label in labels:
        lines.append(f"{label:<12}" + "".join(
            f"{_figure(p.peak_mb.get(label), 0):>9} /{_figure(p.cpu_s.get(label), 1):>5}" for p in phases))
    return "\n".join(lines)
