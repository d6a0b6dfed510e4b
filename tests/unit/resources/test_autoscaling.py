"""Heat's capacity arithmetic and which members a group keeps."""

from __future__ import annotations

import itertools

import pytest

from libs.resources.autoscaling import new_capacity, next_names


@pytest.mark.parametrize(("current", "kind", "adjustment", "step", "expected"), [
    (2, "change_in_capacity", 2, None, 4),
    (2, "change_in_capacity", -5, None, 1),  # clamped to min_size
    (2, "exact_capacity", 9, None, 5),  # clamped to max_size
    (4, "percent_change_in_capacity", 50, None, 5),
    (4, "percent_change_in_capacity", -50, None, 2),
    (3, "percent_change_in_capacity", 10, None, 4),  # under one member rounds away from zero
    (4, "percent_change_in_capacity", 25, 2, 5),  # min_adjustment_step, then clamped
])
def test_new_capacity(current: int, kind: str, adjustment: float, step: int | None, expected: int) -> None:
    assert new_capacity(current, adjustment_type=kind, adjustment=adjustment, min_size=1, max_size=5,
                        min_adjustment_step=step) == expected


def test_the_oldest_members_go_first_and_new_ones_get_fresh_names() -> None:
    fresh = (f"n{i}" for i in itertools.count())
    assert next_names(["a", "b", "c"], 1, lambda: next(fresh)) == ["c"]
    assert next_names(["a"], 3, lambda: next(fresh)) == ["a", "n0", "n1"]
