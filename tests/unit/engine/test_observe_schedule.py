"""When the observer lists a type of a cloud project again: per stack, per type, else the default."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from libs.engine.observe_schedule import Intervals, Schedule

INTERVALS = Intervals(default=60.0, by_type={"OS::Nova::Server": 20.0})


@pytest.mark.parametrize(("type_name", "stacks", "expected"), [
    ("OS::Neutron::Port", [], 60.0),                        # the installation's
    ("OS::Neutron::Port", [None, None], 60.0),              # stacks that ask nothing
    ("OS::Nova::Server", [None], 20.0),                     # the type's
    ("OS::Nova::Server", [None, 45.0], 45.0),               # a stack's, even longer than the type's
    ("OS::Nova::Server", [45.0, 5.0, None], 5.0),           # the shortest any stack of the project asks
])
def test_a_listing_is_due_at_the_shortest_interval_asked(type_name: str, stacks: list[float | None],
                                                         expected: float) -> None:
    assert INTERVALS.listing(type_name, stacks) == expected


def test_the_shortest_configured_interval() -> None:
    assert INTERVALS.shortest == 20.0
    assert Intervals(5.0).shortest == 5.0


@pytest.mark.parametrize(("jitter", "next_due"), [(0.0, 109.0), (0.5, 110.0), (0.999, 110.998)])
def test_the_next_listing_falls_within_the_jitter(jitter: float, next_due: float) -> None:
    schedule = Schedule()
    schedule.listed("k", now=100.0, interval=10.0, jitter=jitter)
    assert schedule.next_due["k"] == pytest.approx(next_due)
    assert not schedule.due("k", next_due - 0.01)
    assert schedule.due("k", next_due)


def test_a_listing_never_made_is_due_and_one_handed_over_is_due_again() -> None:
    schedule = Schedule()
    assert schedule.due("new", 0.0)
    schedule.listed("a", now=0.0, interval=60.0, jitter=0.5)
    schedule.listed("b", now=0.0, interval=60.0, jitter=0.5)
    schedule.forget_except(["b"])
    assert schedule.due("a", 1.0) and not schedule.due("b", 1.0)


@pytest.mark.parametrize(("due", "now", "longest", "wait"), [
    ({}, 0.0, 60.0, 60.0),                  # nothing listed yet: the longest wait, then a pass
    ({"a": 30.0, "b": 12.0}, 10.0, 60.0, 2.0),
    ({"a": 30.0}, 10.0, 5.0, 5.0),          # leases are renewed at least every longest
    ({"a": 3.0}, 10.0, 60.0, 0.0),          # overdue
])
def test_the_wait_until_the_next_listing(due: dict[Hashable, float], now: float, longest: float,
                                         wait: float) -> None:
    assert Schedule(dict(due)).wait(now, longest) == wait
