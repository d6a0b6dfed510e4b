"""bench.scale's pure parts: the stacks it submits, the RSS it samples from /proc, its tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench.scale import parse_args
from bench.scale_report import (
    Peak,
    PhaseFigures,
    ReadFigures,
    RssSampler,
    phase_table,
    process_table,
    read_table,
    tree_rss,
)
from bench.scale_shapes import REPLACED, Phase, Shape, Workload, group_sizes, phases


def test_a_flat_update_of_one_changes_one_resource_only() -> None:
    workload = Workload(Shape.FLAT, 50)
    before = workload.template(Phase.CREATE)["resources"]
    after = workload.template(Phase.UPDATE_ONE)["resources"]
    assert len(before) == len(after) == 50
    assert [name for name in before if before[name] != after[name]] == ["r0"]
    assert workload.template(Phase.UPDATE_SAME) == workload.template(Phase.CREATE)


@pytest.mark.parametrize(("size", "sizes"), [(1000, [1000]), (2500, [1000, 1000, 500]), (10, [10])])
def test_the_groups_shape_holds_the_size_in_groups_of_a_thousand(size: int, sizes: list[int]) -> None:
    assert group_sizes(size) == sizes
    resources = Workload(Shape.GROUPS, size).template(Phase.CREATE)["resources"]
    assert [r["properties"]["count"] for r in resources.values()] == sizes
    assert {r["type"] for r in resources.values()} == {"OS::Heat::ResourceGroup"}


def test_a_group_update_of_one_replaces_one_member_by_its_removal_policy() -> None:
    workload = Workload(Shape.GROUPS, 3000)
    created = workload.template(Phase.CREATE)["resources"]
    changed = workload.template(Phase.UPDATE_ONE)["resources"]
    assert changed["g0"]["properties"]["removal_policies"] == [{"resource_list": [REPLACED]}]
    assert changed["g0"]["properties"]["count"] == 1000
    assert all(changed[name] == created[name] for name in ("g1", "g2"))
    # The no-change update after it keeps the policy: it changes nothing more.
    assert workload.template(Phase.UPDATE_SAME_AFTER) == workload.template(Phase.UPDATE_ONE)
    assert phases(Shape.GROUP)[-1] is Phase.DELETE and Phase.UPDATE_SAME_AFTER not in phases(Shape.FLAT)


def test_the_smoke_run_is_the_flat_ten_thousand_without_the_update_of_one() -> None:
    options = parse_args(["--smoke"])
    assert options.workloads == (Workload(Shape.FLAT, 10_000),)
    assert options.skip == {Phase.UPDATE_ONE} and options.reads == 0
    with pytest.raises(SystemExit):
        parse_args(["--skip", "create"])


def test_a_tree_reports_its_root_and_its_largest_descendant() -> None:
    table = {1: (0, 100), 2: (1, 50), 3: (2, 300), 4: (1, 20), 9: (0, 999)}
    assert tree_rss(table, 1) == (100, 300)
    assert tree_rss(table, 4) == (20, 0)
    assert tree_rss(table, 7) is None


def test_the_process_table_reads_this_process_as_its_status_does() -> None:
    table = process_table()
    parent, rss_kb = table[os.getpid()]
    assert parent == os.getppid()
    lines = Path("/proc/self/status").read_text().splitlines()
    hwm_kb = next(int(line.split()[1]) for line in lines if line.startswith("VmHWM:"))
    assert 0 < rss_kb <= hwm_kb


def test_the_sampler_sees_a_known_process_hold_its_memory() -> None:
    # A child that holds 64 MiB (touched, so resident) and says so, then waits for its stdin to close.
    code = ("import sys; block = bytearray(64 << 20); block[::4096] = b'x' * len(block[::4096]); "
            "print('ready', flush=True); sys.stdin.read()")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None and child.stdout.readline() == b"ready\n"
        with RssSampler({"holder": child.pid, "me": os.getpid()}) as sampler:
            sampler.sample()
        peaks = sampler.peaks()
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait()
    assert peaks["holder"].own_mb >= 64 and peaks["holder"].child_mb == 0
    # This process's largest child is the holder.
    assert peaks["me"].child_mb >= 64


def test_the_tables_show_each_service_and_the_reads() -> None:
    figures = [PhaseFigures("flat 10000", "create", 10_000, 0.5, 4.0, 6.25, 50 * 2**20,
                            {"api": Peak(120.0, 300.0), "planner": Peak(80.0, 0.0)},
                            {"api": 1.5, "postgres": None})]
    text = phase_table(figures)
    assert "api+" in text and "planner+" not in text
    assert "2500" in text and " 50 " in text and "300" in text  # res/s, database MB, the api's child
    assert "1.5" in text and "-" in text
    assert "6.25" in text  # until the last event was published
    reads = read_table([ReadFigures("flat 10000", "stack show", (0.010, 0.030, 0.020), None)])
    assert "20.0" in reads and "30.0" in reads
    assert phase_table([]) == "(no phase completed)"
