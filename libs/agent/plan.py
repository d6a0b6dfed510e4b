"""What the agent does with what it was offered, given its journal (pure).

- A config whose hash is not in the journal is started, once, in the order offered.
- A hash in the journal is never started again: a run taken and not
  collected yet is resumed (collected where it ran, or, if it never got to
  start, started by its runner then); a finished run whose signal is not
  delivered is delivered; a settled one is only acknowledged.
- A config whose group has no hook here is skipped as heat-config skips it:
  nothing recorded, nothing signalled, so it is looked at again on the next
  offer (a hook installed meanwhile runs it). ``os-apply-config`` has no hook
  by design and is skipped quietly.
Keys this process is already working on (``busy``) get no second step.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from libs.agent.configs import DerivedConfig, Refused
from libs.agent.journal import Journal, State


class SkipReason(enum.Enum):
    REFUSED = "refused"  # an item the agent cannot read, or a component with nothing for the action
    NO_HOOK = "no_hook"
    NO_HOOK_EXPECTED = "no_hook_expected"


@dataclasses.dataclass(frozen=True)
class Start:
    config: DerivedConfig


@dataclasses.dataclass(frozen=True)
class Resume:
    key: str


@dataclasses.dataclass(frozen=True)
class Deliver:
    key: str


@dataclasses.dataclass(frozen=True)
class Skip:
    reason: SkipReason
    label: str
    detail: str


Step = Start | Resume | Deliver | Skip
# Groups heat-config takes with no hook: os-apply-config reads the metadata by itself.
EXPECTED_WITHOUT_HOOK = frozenset({"os-apply-config"})


def plan(offered: Sequence[DerivedConfig | Refused], journal: Journal, busy: frozenset[str],
         hooks: frozenset[str]) -> tuple[Step, ...]:
    """Steps in order: runs to resume, signals to deliver, skips and starts as offered."""
    resumes: list[Step] = [Resume(e.key) for e in journal if e.state is State.RUNNING and e.key not in busy]
    deliveries: list[Step] = [Deliver(e.key) for e in journal
                              if e.state is State.FINISHED and e.key not in busy]
    rest: list[Step] = []
    seen: set[str] = set()
    for item in offered:
        if isinstance(item, Refused):
            rest.append(Skip(SkipReason.REFUSED, item.label, item.reason))
        elif item.key in journal or item.key in busy or item.key in seen:
            continue
        elif item.group not in hooks:
            expected = item.group in EXPECTED_WITHOUT_HOOK
            rest.append(Skip(SkipReason.NO_HOOK_EXPECTED if expected else SkipReason.NO_HOOK, item.name,
                             f"no hook for group {item.group!r}"))
        else:
            seen.add(item.key)
            rest.append(Start(item))
    return (*resumes, *deliveries, *rest)
