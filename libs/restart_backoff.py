"""How long a supervised process that died waits before it starts again.

The delay doubles with each crash in a row (0.5, 1, 2, 4, 8, then 10 s), so a
process that dies as it starts is not restarted in a tight loop. A process that
ran for :data:`STABLE_SECONDS` before it died had got past its start: its crash
is a new fault, not the same one again, and costs the first delay only.
"""

from __future__ import annotations

import dataclasses
from typing import Final

FIRST_DELAY: Final = 0.5
MAX_DELAY: Final = 10.0
# Longer than any start takes (a service waits up to 30 s for JetStream's topology),
# so a process that crashes while starting never counts as having run well.
STABLE_SECONDS: Final = 60.0


@dataclasses.dataclass(frozen=True)
class Restart:
    delay: float
    crashes: int  # crashes in a row, this one included


def after_exit(crashes: int, ran_seconds: float, *, stable_seconds: float = STABLE_SECONDS) -> Restart:
    """The restart of a process that died after ``ran_seconds``, ``crashes`` crashes in a row before."""
    in_a_row = 0 if ran_seconds >= stable_seconds else crashes
    return Restart(delay=min(FIRST_DELAY * 2 ** in_a_row, MAX_DELAY), crashes=in_a_row + 1)
