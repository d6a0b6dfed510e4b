"""``bench.observer`` watching running observers: their pass lines, what each interval cost, the requests.

The simulator keeps no count of the requests it answers, and the bench may not change
how it serves them; its chaos API can count them though. A fault that fails nothing,
delays nothing and holds nothing, limited to a number of calls, is spent by one for
each call it matches: :class:`RequestCounter` adds two such faults (every request; the
compute GETs, which while only observers run are the pages of their server listings)
and reads what is left of them.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import requests

from bench import engine
from bench.cloud_report import Tree
from bench.observer_report import Interval, LogTail, PassLine, parse_pass
from libs.embedded import process

_LIMIT = 10**12  # calls a counting fault may match; none runs out
POLL_SECONDS = 0.1


class RequestCounter:
    """The HTTP requests the simulator answered since the counter was made, by kind."""

    KINDS: Mapping[str, Mapping[str, str]] = {"requests": {}, "compute_gets": {"service": "compute",
                                                                                "method": "GET"}}

    def __init__(self, sim_url: str) -> None:
        self.url = f"{sim_url}/chaos/faults"
        self.http = requests.Session()
        self.ids: dict[str, str] = {}
        for kind, spec in self.KINDS.items():
            answer = self.http.post(self.url, json={**spec, "count": _LIMIT, "seconds": 10**8}, timeout=30)
            if answer.status_code != 201:
                raise engine.BenchError(f"the simulator's chaos API refused a counting fault: "
                                        f"{answer.status_code} {answer.text[:200]}")
            self.ids[kind] = str(answer.json()["id"])

    def counts(self) -> dict[str, int]:
        faults = self.http.get(self.url, timeout=30).json()["faults"]
        left = {str(f["id"]): int(f["remaining"]) for f in faults}
        return {kind: _LIMIT - left[fault_id] for kind, fault_id in self.ids.items()}


class Watcher:
    """Observer processes followed through their logs; an :class:`Interval` for each pass line."""

    def __init__(self, procs: Mapping[str, subprocess.Popen[bytes]], log_dir: Path, shared: Sequence[Tree],
                 counter: RequestCounter | None) -> None:
        self.procs = dict(procs)
        self.logs = {label: log_dir / f"{label}.log" for label in procs}
        self.tails = {label: LogTail(path) for label, path in self.logs.items()}
        self.trees = {label: Tree(label, proc.pid) for label, proc in procs.items()}
        self.cpu = {label: 0.0 for label in procs}  # they were just started
        self.shared = list(shared)
        self.shared_cpu = {t.label: t.cpu_seconds() for t in shared}
        self.counter = counter
        self.counted = counter.counts() if counter is not None else {}
        # Requests the bench made itself since the last pass line, taken off the next interval's count.
        self.own: dict[str, int] = {}
        self.intervals: list[Interval] = []
        self.problems: list[str] = []
        self.note = ""

    def passes(self, label: str, since: int = 0) -> list[Interval]:
        return [i for i in self.intervals[since:] if i.observer == label]

    def opened(self, since: int) -> int:
        return sum(i.line.opened for i in self.intervals[since:])

    def poll(self) -> None:
        for label, proc in self.procs.items():
            process.check_running(proc, self.logs[label])
            for entry in self.tails[label].entries():
                message = str(entry.get("msg", ""))
                if entry.get("level") in ("warning", "error"):
                    self.problems.append(f"{label}: {message[:300]}")
                line = parse_pass(message)
                if line is not None:
                    self._passed(label, line)

    def _passed(self, label: str, line: PassLine) -> None:
        tree = self.trees[label]
        cpu = tree.cpu_seconds()
        peak = tree.peak_rss_mb()
        tree.reset_peak()
        spent = None if cpu is None else cpu - self.cpu[label]
        if cpu is not None:
            self.cpu[label] = cpu
        shared: dict[str, float | None] = {}
        for each in self.shared:
            now, before = each.cpu_seconds(), self.shared_cpu[each.label]
            shared[each.label] = None if now is None or before is None else now - before
            self.shared_cpu[each.label] = now
        requests_made: dict[str, int | None] = {kind: None for kind in RequestCounter.KINDS}
        if self.counter is not None:
            counts = self.counter.counts()
            requests_made = {k: counts[k] - self.counted[k] - self.own.get(k, 0) for k in counts}
            self.counted, self.own = counts, {}
        self.intervals.append(Interval(
            observer=label, number=len(self.passes(label)) + 1, line=line, cpu_s=spent, peak_mb=peak,
            sim_cpu_s=shared.get("simcloud"), db_cpu_s=shared.get("postgres"),
            requests=requests_made["requests"], compute_gets=requests_made["compute_gets"], note=self.note))

    def mine(self, work: Callable[[], None]) -> None:
        """Run ``work``, which calls the simulator: its requests are not the observers' (those of a
        pass under way meanwhile would be taken off too, so ``work`` runs right after a pass)."""
        before = self.counter.counts() if self.counter is not None else {}
        work()
        if self.counter is not None:
            after = self.counter.counts()
            for kind, count in after.items():
                self.own[kind] = self.own.get(kind, 0) + count - before[kind]

    def wait(self, done: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.poll()
            if done():
                return
            if time.monotonic() > deadline:
                raise engine.BenchError(f"no {what} within {timeout:g} s; the observers logged "
                                        f"{len(self.intervals)} pass(es); problems: {self.problems[-5:]}")
            time.sleep(POLL_SECONDS)

    def next_pass(self, timeout: float) -> None:
        """Until some observer ends a pass."""
        seen = len(self.intervals)
        self.wait(lambda: len(self.intervals) > seen, timeout, "pass")
