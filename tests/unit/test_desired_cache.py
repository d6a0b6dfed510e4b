"""The workers' cache of desired states is bounded by the resources its entries hold."""

from __future__ import annotations

import pytest

from services.worker.desired_cache import RESOURCES_KEPT, WeightedLru


@pytest.mark.parametrize(("budget", "puts", "gets", "kept", "held"), [
    # 101 nested stacks of 1,000 under way at once all fit the default budget.
    (RESOURCES_KEPT, [(f"s{i}", 1000) for i in range(101)], [], {f"s{i}" for i in range(101)}, 101_000),
    # Past the budget, the least recently used go first: s0 was used again, s1 goes.
    (250, [("s0", 100), ("s1", 100), ("s2", 100)], ["s0"], {"s0", "s2"}, 200),
    # One bigger than the whole budget (a group of 10^6 members) is kept alone.
    (RESOURCES_KEPT, [("small", 10), ("big", 1_000_000)], [], {"big"}, 1_000_000),
    # Each entry counts at least one.
    (2, [("a", 0), ("b", 0), ("c", 0)], [], {"b", "c"}, 2),
])
def test_entries_are_kept_by_the_resources_they_hold(
        budget: int, puts: list[tuple[str, int]], gets: list[str], kept: set[str], held: int) -> None:
    cache: WeightedLru[str, str] = WeightedLru(budget)
    gone: list[str] = []
    for index, (key, weight) in enumerate(puts):
        gone += cache.put(key, key, weight)
        if index == 1:
            for key_used in gets:
                assert cache.get(key_used) == key_used
    assert {key for key, _ in puts if cache.get(key) is not None} == kept
    assert sorted(gone) == sorted({key for key, _ in puts} - kept)
    assert cache.held == held


def test_a_desired_state_loaded_twice_at_once_counts_once() -> None:
    cache: WeightedLru[str, object] = WeightedLru(100)
    first, second = object(), object()
    assert cache.put("s", first, 10) == []
    assert cache.put("s", second, 10) == [first]
    assert cache.get("s") is second and cache.held == 10 and len(cache) == 1
