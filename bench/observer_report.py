"""``bench.observer``'s pure parts: the stacks it submits, the observer's pass lines, its tables."""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

# services/observer/main.py logs one such line at the end of each pass.
_PASS = re.compile(r"observed (\d+) resource\(s\) of (\d+) cloud project\(s\) \((\d+) held\) with (\d+)"
                   r" list call\(s\): (\d+) drift opened, (\d+) closed, (\d+) heal\(s\) asked in ([\d.]+)s")


@dataclasses.dataclass(frozen=True)
class PassLine:
    """What one pass of an observer says it did."""

    compared: int
    targets: int
    held: int
    list_calls: int
    opened: int
    closed: int
    heals: int
    seconds: float


def parse_pass(message: str) -> PassLine | None:
    found = _PASS.search(message)
    if found is None:
        return None
    *counts, seconds = found.groups()
    compared, targets, held, list_calls, opened, closed, heals = (int(c) for c in counts)
    return PassLine(compared, targets, held, list_calls, opened, closed, heals, float(seconds))


class LogTail:
    """The JSON entries a service appended to its log since the last read (whole lines only)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0

    def entries(self) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as log:
                log.seek(self.offset)
                data = log.read()
        except OSError:
            return []
        whole = data[:data.rfind(b"\n") + 1]
        self.offset += len(whole)
        found = []
        for line in whole.splitlines():
            with contextlib.suppress(ValueError):
                entry = orjson.loads(line)
                if isinstance(entry, dict):
                    found.append(entry)
        return found


def spread(total: int, parts: int) -> list[int]:
    """``total`` split over ``parts`` as evenly as can be, the larger shares first."""
    base, extra = divmod(total, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def project_names(count: int) -> list[tuple[str, str]]:
    """(Ember project, cloud project) pairs: ``obs01`` works in the simulator's ``bench-obs01``."""
    width = max(2, len(str(count)))
    return [(f"obs{i + 1:0{width}d}", f"bench-obs{i + 1:0{width}d}") for i in range(count)]


def cloud_projects(pairs: Sequence[tuple[str, str]], cloud: str) -> str:
    """``EMBER_CLOUD_PROJECTS``: each Ember project to its cloud project of the ``cloud`` entry."""
    return ",".join(f"{project}={cloud}/{cloud_project}" for project, cloud_project in pairs)


def template(servers: int, prefix: str) -> dict[str, Any]:
    """One ``OS::Heat::ResourceGroup`` of ``servers`` servers on no network (member i is ``<prefix>-i``)."""
    return {"heat_template_version": "2018-08-31", "resources": {"servers": {
        "type": "OS::Heat::ResourceGroup", "properties": {"count": servers, "resource_def": {
            "type": "OS::Nova::Server", "properties": {
                "name": f"{prefix}-%index%", "image": "cirros", "flavor": "m1.tiny",
                "networks": [{"allocate_network": "none"}]}}}}}}


def member_of(server_name: str, prefix: str) -> str | None:
    """The group member a server of :func:`template` is (its index), or None if it is not one."""
    head, dash, index = server_name.rpartition("-")
    return index if dash and head == prefix and index.isdigit() else None


# ---- what is printed -----------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Interval:
    """One pass line and what was spent since the one before it."""

    observer: str
    number: int  # the observer's own pass count, from 1
    line: PassLine
    # The observer's CPU since its previous pass line (the first: since it started) and its peak
    # RSS in that span (VmHWM, reset at each line).
    cpu_s: float | None
    peak_mb: float | None
    # Since the previous pass line of any observer: the simulator's and PostgreSQL's CPU and the
    # HTTP requests the simulator answered (all, and compute GETs: the server listings' pages).
    sim_cpu_s: float | None
    db_cpu_s: float | None
    requests: int | None
    compute_gets: int | None
    note: str = ""


def _figure(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def intervals_table(intervals: Sequence[Interval]) -> str:
    lines = [f"{'observer':<10} {'pass':>4} {'compared':>8} {'projects':>8} {'held':>4} {'lists':>5}"
             f" {'opened':>6} {'closed':>6} {'pass s':>7} {'CPU s':>6} {'MiB':>5} {'sim CPU':>7}"
             f" {'db CPU':>6} {'requests':>8} {'pages':>5}  note"]
    for i in intervals:
        p = i.line
        lines.append(f"{i.observer:<10} {i.number:>4} {p.compared:>8} {p.targets:>8} {p.held:>4}"
                     f" {p.list_calls:>5} {p.opened:>6} {p.closed:>6} {p.seconds:>7.2f}"
                     f" {_figure(i.cpu_s, 2):>6} {_figure(i.peak_mb, 0):>5} {_figure(i.sim_cpu_s, 2):>7}"
                     f" {_figure(i.db_cpu_s, 2):>6} {_figure(i.requests, 0):>8}"
                     f" {_figure(i.compute_gets, 0):>5}  {i.note}".rstrip())
    return "\n".join(lines)


def steady_summary(intervals: Sequence[Interval]) -> str:
    """Per observer, the mean of its passes after the first (which includes its start-up)."""
    lines = []
    for observer in dict.fromkeys(i.observer for i in intervals):
        later = [i for i in intervals if i.observer == observer and i.number > 1 and not i.note]
        cpu = [i.cpu_s for i in later if i.cpu_s is not None]
        if not later or not cpu:
            continue
        compared = sum(i.line.compared for i in later) / len(later)
        seconds = sum(i.line.seconds for i in later) / len(later)
        mean_cpu = sum(cpu) / len(cpu)
        per_thousand = f", {1000 * mean_cpu / compared:.2f} CPU s per 1,000 resources" if compared else ""
        lines.append(f"{observer}: {len(later)} steady pass(es): {compared:.0f} resources compared, "
                     f"{seconds:.2f} s a pass, {mean_cpu:.2f} CPU s an interval{per_thousand}")
    return "\n".join(lines)
