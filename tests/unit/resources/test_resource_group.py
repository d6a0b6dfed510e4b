"""Which members a resource group has for a count and the names removal policies took out."""

from __future__ import annotations

import pytest

from libs.resources.resource_group import member_names


@pytest.mark.parametrize(("count", "removed", "expected"), [
    (3, set(), ["0", "1", "2"]),
    (5, set(), ["0", "1", "2", "3", "4"]),
    (2, set(), ["0", "1"]),  # a shrink drops the highest indices
    (2, {"0"}, ["1", "2"]),  # a removed name goes first and is never used again
    (3, {"0", "2"}, ["1", "3", "4"]),
    (0, {"1"}, []),
])
def test_member_names(count: int, removed: set[str], expected: list[str]) -> None:
    assert member_names(count, removed) == expected


@pytest.mark.parametrize(("target", "current", "batch", "min_in_service", "expected"), [
    # (members during each batch, members it updates), as Heat's rolling_update gives them
    (4, 4, 2, 0, [(4, 2), (4, 2)]),
    (4, 4, 1, 3, [(4, 1), (4, 1), (4, 1), (4, 1)]),
    (3, 3, 2, 3, [(5, 2), (5, 2), (4, 1), (3, 0)]),  # grows for a while to keep three in service
    (2, 4, 1, 0, [(2, 1), (2, 1)]),
])
def test_rolling_batches(target: int, current: int, batch: int, min_in_service: int,
                         expected: list[tuple[int, int]]) -> None:
    from libs.resources import rolling
    seen = []
    up_to_date = 0
    while rolling.needs_update(target, current, up_to_date):
        capacity, count = rolling.next_batch(target, current, up_to_date, batch, min_in_service)
        seen.append((capacity, count))
        current, up_to_date = rolling.after_batch(target, current, up_to_date, capacity, count)
    assert seen == expected
