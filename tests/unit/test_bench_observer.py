"""bench.observer's pure parts: its options, the stacks it submits, the observer's pass lines, its tables."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from bench.observer import deletions, parse_args
from bench.observer_report import (
    Interval,
    LogTail,
    PassLine,
    cloud_projects,
    intervals_table,
    member_of,
    parse_pass,
    project_names,
    spread,
    steady_summary,
    template,
)
from libs import config
from libs.cloud.caller import CloudTarget
from libs.cloud.targets import target_for

LINE = ("observed 10000 resource(s) of 10 cloud project(s) (5 held) with 5 list call(s): 100 drift opened,"
        " 2 closed, 0 heal(s) asked in 41.07s")


def test_the_defaults_are_the_issues_case_and_smoke_is_small() -> None:
    options = parse_args([])
    assert (options.servers, options.projects, options.observers, options.passes) == (10_000, 10, 1, 3)
    assert options.interval == 10.0 and options.delete_percent == 1.0
    smoke = parse_args(["--smoke", "--observers", "2"])
    assert (smoke.servers, smoke.projects, smoke.interval, smoke.passes) == (20, 2, 1.0, 2)
    assert smoke.observers == 2


@pytest.mark.parametrize("argv", [["--projects", "0"], ["--servers", "3", "--projects", "4"],
                                  ["--observers", "0"], ["--passes", "0"], ["--interval", "0"],
                                  ["--delete-percent", "0"], ["--delete-percent", "101"]])
def test_options_out_of_range_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(argv)


def test_one_percent_is_deleted_and_never_none() -> None:
    assert deletions(10_000, 1.0) == 100
    assert deletions(20, 1.0) == 1
    assert deletions(1000, 100) == 1000


def test_a_pass_line_is_read_and_other_lines_are_not() -> None:
    assert parse_pass(LINE) == PassLine(compared=10_000, targets=10, held=5, list_calls=5, opened=100,
                                        closed=2, heals=0, seconds=41.07)
    assert parse_pass("observing failed") is None
    assert parse_pass(LINE.replace("10000", "many")) is None


def test_the_log_is_read_in_whole_lines_only(tmp_path: Path) -> None:
    log = tmp_path / "observer1.log"
    tail = LogTail(log)
    assert tail.entries() == []  # not written yet
    log.write_bytes(orjson.dumps({"msg": LINE}) + b"\nnot json\n" + b'{"msg": "half')
    assert [e["msg"] for e in tail.entries()] == [LINE]
    with log.open("ab") as more:
        more.write(b' a line"}\n')
    assert tail.entries() == [{"msg": "half a line"}]
    assert tail.entries() == []


@pytest.mark.parametrize(("total", "parts"), [(10_000, 10), (20, 2), (7, 3), (1, 1), (5, 7)])
def test_servers_are_spread_evenly(total: int, parts: int) -> None:
    shares = spread(total, parts)
    assert len(shares) == parts and sum(shares) == total and max(shares) - min(shares) <= 1


def test_each_ember_project_maps_to_its_cloud_project_as_config_reads_it() -> None:
    pairs = project_names(10)
    assert pairs[0] == ("obs01", "bench-obs01") and pairs[9] == ("obs10", "bench-obs10")
    assert len({p for p, _ in project_names(100)}) == 100
    mapped = cloud_projects(pairs, "simcloud")
    settings = config.load({"EMBER_CLOUD_PROJECTS": mapped, "OS_CLOUD": "simcloud"})
    assert [target_for(settings.cloud, p) for p, _ in pairs] == [CloudTarget("simcloud", c) for _, c in pairs]


def test_the_stack_is_a_group_of_servers_on_no_network_whose_names_give_their_member() -> None:
    group = template(1000, "obs01-group-server")["resources"]["servers"]
    assert group["type"] == "OS::Heat::ResourceGroup" and group["properties"]["count"] == 1000
    server = group["properties"]["resource_def"]
    assert server["type"] == "OS::Nova::Server"
    assert server["properties"]["networks"] == [{"allocate_network": "none"}]
    name = server["properties"]["name"].replace("%index%", "17")
    assert member_of(name, "obs01-group-server") == "17"
    assert member_of("obs01-group-server-x", "obs01-group-server") is None
    assert member_of("obs02-group-server-17", "obs01-group-server") is None


def _interval(number: int, cpu: float | None, note: str = "") -> Interval:
    return Interval("observer1", number, PassLine(1000, 10, 10, 10, 0, 0, 0, 2.5), cpu_s=cpu, peak_mb=90.0,
                    sim_cpu_s=0.1, db_cpu_s=None, requests=10, compute_gets=10, note=note)


def test_the_tables_show_every_pass_and_the_mean_of_the_steady_ones() -> None:
    intervals = [_interval(1, 9.0), _interval(2, 2.0), _interval(3, 4.0),
                 _interval(4, 50.0, "after the deletes")]
    table = intervals_table(intervals)
    assert len(table.splitlines()) == 5 and "after the deletes" in table and " - " in table
    summary = steady_summary(intervals)  # passes 2 and 3: the first starts up, the last has a note
    assert "2 steady pass(es)" in summary and "3.00 CPU s an interval" in summary
    assert steady_summary([_interval(1, 9.0)]) == ""
