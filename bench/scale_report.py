"""What ``bench.scale`` measures besides time: every service's RSS sampled from /proc while a phase
runs, and the tables it prints.

The sampler reads ``/proc/<pid>/stat`` of every process once per tick (one read each gives the
parent and the resident pages), so a service's tree (the api's and the workers' template
evaluation processes) is seen as it grows. A peak shorter than a tick can be missed in the
children; a service's own process also reports its ``VmHWM``, reset at the phase's start, which
misses nothing.
"""

from __future__ import annotations

import dataclasses
import os
import statistics
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from bench import engine

_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
# pid -> (parent pid, resident KiB)
ProcessTable = dict[int, tuple[int, int]]


def process_table(proc: Path = Path("/proc")) -> ProcessTable:
    """Every process's parent and RSS, from one read of its ``stat``."""
    table: ProcessTable = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue  # gone since the listing
        fields = text.rsplit(")", 1)[1].split()
        # After the command: state, ppid (field 4), ... rss in pages (field 24).
        table[int(entry.name)] = (int(fields[1]), int(fields[21]) * _PAGE_KB)
    return table


def tree_rss(table: Mapping[int, tuple[int, int]], root: int) -> tuple[int, int] | None:
    """(the root's RSS, the largest RSS of any one of its descendants) in KiB; None if it is gone."""
    if root not in table:
        return None
    children: dict[int, list[int]] = {}
    for pid, (ppid, _rss) in table.items():
        children.setdefault(ppid, []).append(pid)
    largest, todo = 0, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        largest = max(largest, table[pid][1])
        todo += children.get(pid, [])
    return table[root][1], largest


@dataclasses.dataclass(frozen=True)
class Peak:
    """A service's peak RSS in a phase, MiB: its own process, and its largest descendant (0: none)."""

    own_mb: float
    child_mb: float


class RssSampler:
    """Samples the trees of ``roots`` (label -> pid) every ``interval`` s on a thread until stopped."""

    def __init__(self, roots: Mapping[str, int], interval: float = 0.25) -> None:
        self.roots = dict(roots)
        self.interval = interval
        self._kb: dict[str, tuple[int, int]] = {label: (0, 0) for label in roots}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rss-sampler", daemon=True)
        self._reset = {label: engine.Watched(label, pid).reset_peak() for label, pid in roots.items()}

    def sample(self) -> None:
        table = process_table()
        for label, pid in self.roots.items():
            found = tree_rss(table, pid)
            if found is not None:
                own, child = self._kb[label]
                self._kb[label] = (max(own, found[0]), max(child, found[1]))

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> RssSampler:
        self.sample()
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def peaks(self) -> dict[str, Peak]:
        found = {}
        for label, (own, child) in self._kb.items():
            own_mb = own / 1024
            hwm = engine.Watched(label, self.roots[label]).peak_rss_mb() if self._reset[label] else None
            found[label] = Peak(max(own_mb, hwm or 0.0), child / 1024)
        return found


# ---- what a phase and a read measured ----------------------------------------------------
@dataclasses.dataclass(frozen=True)
class PhaseFigures:
    workload: str
    phase: str
    size: int
    # Until the api answered the request, until the stack settled, and until the notifier had
    # published the phase's last event (a watcher of the event stream saw it; CPU is counted to here).
    answer_s: float
    wall_s: float
    events_s: float
    # pg_database_size after the phase.
    database_bytes: int
    peaks: dict[str, Peak]
    cpu_s: dict[str, float | None]


@dataclasses.dataclass(frozen=True)
class ReadFigures:
    workload: str
    what: str
    seconds: tuple[float, ...]
    # What the answer held (resources or events listed), if a list.
    rows: int | None = None


def _mb(value: float) -> str:
    return f"{value:.0f}" if value else "-"


def _cpu(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def phase_table(figures: Sequence[PhaseFigures]) -> str:
    """One line per phase: times, rate, database size, then every service's peak RSS (MiB; a
    ``+`` column is the largest of its children, the evaluation processes) and CPU seconds."""
    if not figures:
        return "(no phase completed)"
    labels = list(dict.fromkeys(label for f in figures for label in f.peaks))
    children = [label for label in labels
                if any(f.peaks[label].child_mb for f in figures if label in f.peaks)]
    columns = [c for label in labels for c in ([label, f"{label}+"] if label in children else [label])]
    head = (f"{'workload':<14}{'phase':<15}{'answer s':>9}{'wall s':>9}{'events s':>9}{'res/s':>9}"
            f"{'db MB':>8}"
            "   peak RSS MiB: " + " ".join(f"{c:>9}" for c in columns))
    lines = [head, "-" * len(head)]
    for f in figures:
        cells = []
        for label in labels:
            peak = f.peaks.get(label, Peak(0.0, 0.0))
            cells.append(_mb(peak.own_mb))
            if label in children:
                cells.append(_mb(peak.child_mb))
        lines.append(f"{f.workload:<14}{f.phase:<15}{f.answer_s:9.2f}{f.wall_s:9.2f}{f.events_s:9.2f}"
                     f"{f.size / f.wall_s if f.wall_s else 0:9.0f}{f.database_bytes / 2**20:8.0f}"
                     "                 " + " ".join(f"{c:>9}" for c in cells))
    cpu_labels = list(dict.fromkeys(label for f in figures for label in f.cpu_s))
    head = f"{'workload':<14}{'phase':<15}   CPU s: " + " ".join(f"{label:>9}" for label in cpu_labels)
    lines += ["", head, "-" * len(head)]
    for f in figures:
        lines.append(f"{f.workload:<14}{f.phase:<15}          "
                     + " ".join(f"{_cpu(f.cpu_s.get(label)):>9}" for label in cpu_labels))
    return "\n".join(lines)


def read_table(reads: Sequence[ReadFigures]) -> str:
    """The latency of each read: median and max of its calls, in ms."""
    if not reads:
        return ""
    head = f"{'workload':<14}{'read':<40}{'calls':>6}{'median ms':>11}{'max ms':>9}{'rows':>9}"
    lines = [head, "-" * len(head)]
    for r in reads:
        rows = "-" if r.rows is None else str(r.rows)
        lines.append(f"{r.workload:<14}{r.what:<40}{len(r.seconds):6d}"
                     f"{1000 * statistics.median(r.seconds):11.1f}{1000 * max(r.seconds):9.1f}{rows:>9}")
    return "\n".join(lines)
