"""Which configs the agent starts, resumes, signals or skips, given its journal (libs/agent/plan)."""

from __future__ import annotations

from typing import Any

import pytest

from libs.agent import configs
from libs.agent.configs import DerivedConfig
from libs.agent.journal import Journal, State
from libs.agent.plan import Deliver, Resume, Skip, SkipReason, Start, plan
from tests.agent_items import item

A, B, C = "a" * 64, "b" * 64, "c" * 64


def _parsed(*items: Any) -> list[DerivedConfig | configs.Refused]:
    return [configs.parse(i) for i in items]


def _journal(**states: State) -> Journal:
    journal = Journal()
    for key, state in states.items():
        journal = journal.taken(key * 64, "id", key, "script", 1.0).moved(key * 64, state, 2.0)
    return journal


def _shown(steps: tuple[Any, ...]) -> list[str]:
    out = []
    for step in steps:
        if isinstance(step, Start):
            out.append(f"start {step.config.name}")
        elif isinstance(step, Resume | Deliver):
            out.append(f"{type(step).__name__.lower()} {step.key[0]}")
        elif isinstance(step, Skip):
            out.append(f"skip {step.label} {step.reason.value}")
    return out


CASES = [
    ("a new config is started", [item("one", key=A)], Journal(), set(), ["start one"]),
    ("in the order offered", [item("two", key=B), item("one", key=A)], Journal(), set(),
     ["start two", "start one"]),
    ("a hash offered twice in one list starts once", [item("one", key=A), item("again", key=A)], Journal(),
     set(), ["start one"]),
    ("a hash signalled is only acknowledged", [item("one", key=A)], _journal(a=State.SIGNALLED), set(), []),
    ("a hash given up is not tried again", [item("one", key=A)], _journal(a=State.GAVE_UP), set(), []),
    ("a hash taken but not collected is resumed, not started", [item("one", key=A)],
     _journal(a=State.RUNNING), set(), ["resume a"]),
    ("a finished hash not signalled is delivered", [item("one", key=A)], _journal(a=State.FINISHED), set(),
     ["deliver a"]),
    ("unfinished work is resumed even when no longer offered", [],
     _journal(a=State.RUNNING, b=State.FINISHED),
     set(), ["resume a", "deliver b"]),
    ("what this process works on already gets no second step", [item("one", key=A), item("two", key=B)],
     _journal(a=State.RUNNING), {A, B}, []),
    ("resumes and deliveries come before new starts", [item("three", key=C)],
     _journal(a=State.RUNNING, b=State.FINISHED), set(), ["resume a", "deliver b", "start three"]),
    ("a changed config is a new hash and runs", [item("one", key=B)], _journal(a=State.SIGNALLED), set(),
     ["start one"]),
]


@pytest.mark.parametrize(("offered", "journal", "busy", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_what_runs(offered: list[Any], journal: Journal, busy: set[str], expected: list[str]) -> None:
    assert _shown(plan(_parsed(*offered), journal, frozenset(busy), frozenset({"script"}))) == expected


@pytest.mark.parametrize(("group", "reason"), [
    ("puppet", SkipReason.NO_HOOK),
    ("Heat::Ungrouped", SkipReason.NO_HOOK),
    ("os-apply-config", SkipReason.NO_HOOK_EXPECTED),
])
def test_a_group_without_a_hook_is_skipped_and_not_recorded(group: str, reason: SkipReason) -> None:
    steps = plan(_parsed(item("one", key=A, group=group)), Journal(), frozenset(), frozenset({"script"}))
    assert steps == (Skip(reason, "one", f"no hook for group {group!r}"),)
    # Offered again once a hook exists, it runs: the skip left nothing behind.
    later = plan(_parsed(item("one", key=A, group=group)), Journal(), frozenset(), frozenset({group}))
    assert _shown(later) == ["start one"]


def test_an_unreadable_item_is_skipped_and_the_rest_still_run() -> None:
    offered = _parsed({"name": "broken"}, item("one", key=A))
    steps = plan(offered, Journal(), frozenset(), frozenset({"script"}))
    assert _shown(steps) == ["skip broken refused", "start one"]
