"""When the observer lists a resource type of a cloud project again: intervals per type and per stack.

Pure decisions over data. One listing covers every stack of a project that has
resources of the type, so it is due at the shortest interval any of them asks
for: a stack's ``convergence.interval``, else the type's configured interval
(``EMBER_OBSERVE_INTERVALS``), else the installation's (``EMBER_OBSERVE_INTERVAL``).
Each next time is jittered (0.9 to 1.1 of the interval), so observers and
types do not move in step.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Iterable, Mapping

# Jitter bounds, as fractions of an interval.
JITTER_LOW = 0.9
JITTER_HIGH = 1.1


@dataclasses.dataclass(frozen=True)
class Intervals:
    """The configured intervals: the installation's, and per resource type where given."""

    default: float
    by_type: Mapping[str, float] = dataclasses.field(default_factory=dict)

    def for_type(self, type_name: str) -> float:
        return self.by_type.get(type_name, self.default)

    def listing(self, type_name: str, stack_intervals: Iterable[float | None]) -> float:
        """How often a project's listing of ``type_name`` is due, for stacks asking these intervals."""
        asked = [i for i in stack_intervals if i is not None]
        return min(asked) if asked else self.for_type(type_name)

    @property
    def shortest(self) -> float:
        return min([self.default, *self.by_type.values()])


@dataclasses.dataclass
class Schedule:
    """The next time each listing (a key: project and type) is due; an observer's own state."""

    next_due: dict[Hashable, float] = dataclasses.field(default_factory=dict)

    def due(self, key: Hashable, now: float) -> bool:
        """Never listed (or handed over since): due now."""
        return now >= self.next_due.get(key, now)

    def listed(self, key: Hashable, now: float, interval: float, jitter: float) -> None:
        """``jitter`` a draw in [0, 1): where within the jitter bounds the next time falls."""
        self.next_due[key] = now + interval * (JITTER_LOW + (JITTER_HIGH - JITTER_LOW) * jitter)

    def forget_except(self, keys: Iterable[Hashable]) -> None:
        """Listings this observer no longer holds: due at once should it hold them again."""
        kept = set(keys)
        for key in [k for k in self.next_due if k not in kept]:
            del self.next_due[key]

    def wait(self, now: float, longest: float) -> float:
        """Seconds until the next listing is due, at most ``longest`` (leases are renewed each pass)."""
        if not self.next_due:
            return longest
        return max(0.0, min(longest, min(self.next_due.values()) - now))

