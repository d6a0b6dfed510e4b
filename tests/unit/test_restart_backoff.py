"""The supervisor's restart delay: growing while a process keeps dying, reset once it ran well."""

from __future__ import annotations

import pytest

from libs.restart_backoff import STABLE_SECONDS, Restart, after_exit


@pytest.mark.parametrize(("crashes", "ran_seconds", "expected"), [
    (0, 0.1, Restart(0.5, 1)),                    # the first crash costs half a second
    (1, 0.1, Restart(1.0, 2)),
    (2, 0.1, Restart(2.0, 3)),
    (3, 0.1, Restart(4.0, 4)),
    (4, 0.1, Restart(8.0, 5)),
    (5, 0.1, Restart(10.0, 6)),                   # capped
    (40, 0.1, Restart(10.0, 41)),
    (5, STABLE_SECONDS - 0.1, Restart(10.0, 6)),  # not quite long enough to count as running well
    (5, STABLE_SECONDS, Restart(0.5, 1)),         # ran well: a new fault, the first delay again
    (40, 3600.0, Restart(0.5, 1)),
    (0, 3600.0, Restart(0.5, 1)),
])
def test_restart_delay(crashes: int, ran_seconds: float, expected: Restart) -> None:
    assert after_exit(crashes, ran_seconds) == expected


def test_a_process_that_keeps_crashing_after_running_well_is_never_slowed_down() -> None:
    crashes = 0
    delays = []
    for _ in range(10):
        restart = after_exit(crashes, ran_seconds=STABLE_SECONDS * 2)
        crashes = restart.crashes
        delays.append(restart.delay)
    assert delays == [0.5] * 10


def test_the_stable_time_is_configurable_per_call() -> None:
    assert after_exit(5, 2.0, stable_seconds=1.0) == Restart(0.5, 1)
    assert after_exit(5, 0.5, stable_seconds=1.0) == Restart(10.0, 6)
