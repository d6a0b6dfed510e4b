"""The one mapping from a handler's result to a JetStream outcome."""

from __future__ import annotations

import asyncio

import pytest

from libs.errors import GIVE_UP_AFTER, Conflict, Permanent, Retry
from libs.messaging.consumer import Outcome, backoff, counts_as_failure, outcome_for
from libs.messaging.payloads import PayloadError


@pytest.mark.parametrize(
    ("error", "delivered", "expected"),
    [
        (None, 1, Outcome("ack")),
        (Retry(5.0, "server still booting"), 1, Outcome("nak", 5.0, "server still booting")),
        (Conflict("resource locked"), 3, Outcome("nak", 0.2, "resource locked")),
        (Permanent("stale traversal"), 1, Outcome("term", reason="stale traversal")),
        (PayloadError("unknown payload kind 'x'"), 1, Outcome("term", reason="unknown payload kind 'x'")),
        (asyncio.CancelledError(), 2, Outcome("nak", 0.0, "handed back at shutdown")),
        (KeyError("boom"), 1, Outcome("nak", 0.5, "KeyError: 'boom'")),
        (RuntimeError("db gone"), 4, Outcome("nak", 4.0, "RuntimeError: db gone")),
        # The GIVE_UP_AFTER-th failure of the same message: retrying will not help.
        (KeyError("foo.yaml"), GIVE_UP_AFTER,
         Outcome("give_up", reason=f"failed {GIVE_UP_AFTER} times: KeyError: 'foo.yaml'")),
        # The database or NATS failing is waited out, however long it lasts, and tried again
        # every few seconds so that the work resumes soon after the server is back.
        (ConnectionRefusedError("no db"), 1, Outcome("nak", 0.5, "ConnectionRefusedError: no db")),
        (ConnectionRefusedError("no db"), 50, Outcome("nak", 2.0, "ConnectionRefusedError: no db")),
        (TimeoutError(), 9, Outcome("nak", 2.0, "TimeoutError: ")),
        # A wait is no failure, however often it happened.
        (Retry(10.0, "server still booting"), 500, Outcome("nak", 10.0, "server still booting")),
    ],
)
def test_outcome_for(error: BaseException | None, delivered: int, expected: Outcome) -> None:
    assert outcome_for(error, delivered) == expected


def test_backoff_grows_and_caps() -> None:
    assert [backoff(n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert backoff(50) == 60.0


def test_only_errors_count_towards_giving_up() -> None:
    assert counts_as_failure(KeyError("x")) and counts_as_failure(OSError("db"))
    for waited in (None, Retry(1.0), Conflict("busy"), Permanent("gone"), asyncio.CancelledError()):
        assert not counts_as_failure(waited)
