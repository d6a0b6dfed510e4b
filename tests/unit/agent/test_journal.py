"""The journal of applied hashes (libs/agent/journal): states only move forward, and it round-trips."""

from __future__ import annotations

import pytest

from libs.agent.journal import Journal, State


def test_a_hash_is_taken_once_and_its_state_only_moves_forward() -> None:
    journal = Journal().taken("k", "id", "one", "script", 1.0)
    with pytest.raises(ValueError, match="taken already"):
        journal.taken("k", "id", "one", "script", 2.0)
    finished = journal.moved("k", State.FINISHED, 2.0, status_code=3)
    assert finished.get("k") is not None and finished.get("k").status_code == 3  # type: ignore[union-attr]
    assert finished.moved("k", State.RUNNING, 3.0) == finished
    settled = finished.moved("k", State.GAVE_UP, 4.0)
    assert settled.moved("k", State.SIGNALLED, 5.0) == settled
    assert journal.get("k").state is State.RUNNING  # type: ignore[union-attr]


def test_it_round_trips_through_json_and_refuses_what_it_did_not_write() -> None:
    journal = Journal().taken("k", "id", "one", "script", 1.0).moved("k", State.SIGNALLED, 2.0, 0)
    journal = journal.taken("j", "id2", "two", "ansible", 3.0)
    assert Journal.from_json(journal.to_json()) == journal
    bad: object
    for bad in ({}, [], {"format": 99, "entries": []}):
        with pytest.raises(ValueError):
            Journal.from_json(bad)
