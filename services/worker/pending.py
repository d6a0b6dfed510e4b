"""The cloud calls a step asked for, kept in the resource's data until the next step has their answers.

Kept under a reserved key, never shown to a plugin. ``attempted`` is written
and committed before the calls are made: a worker that dies after making them
leaves the mark, and the redelivered step runs the plugin's ``check`` without
their answers (it finds what a lost call made by ``ctx.cloud_tag``) instead of
making them again.

A call the cloud answers with a quota, server or unreachable error
(``ErrorKind.retried``; for a call that makes something, only where the cloud
surely made nothing: :func:`~libs.cloud.calls.worth_retrying`) is made again
after a backoff, up to :data:`TRIES` times, before the plugin sees the error: the answers already had are kept
(``answered``), only the calls that failed so are made again, on the
redelivery the backoff asks for (no worker sleeps). Pure.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any

from libs.cloud.calls import Answer, Answers, CloudCall, CloudError, ErrorKind, Service, worth_retrying

KEY = "ember_calls"
# Tries of a call the cloud answers with a retried error, the first included.
TRIES = 5


@dataclasses.dataclass(frozen=True)
class Pending:
    calls: tuple[CloudCall, ...]
    attempted: bool
    # Answers had in earlier tries, by call key (kept while the others are tried again).
    answered: Mapping[str, Answer] = dataclasses.field(default_factory=dict)
    tries: int = 1

    @property
    def to_make(self) -> tuple[CloudCall, ...]:
        """The calls still to make: those with no answer yet."""
        return tuple(c for c in self.calls if c.key not in self.answered)


def recorded(data: Mapping[str, Any], calls: Sequence[CloudCall], *, attempted: bool) -> dict[str, Any]:
    """``data`` with ``calls`` kept under :data:`KEY`."""
    return _with(data, Pending(tuple(calls), attempted))


def of(data: Mapping[str, Any]) -> Pending | None:
    """The calls kept in ``data``, if any."""
    kept = data.get(KEY)
    if not isinstance(kept, dict):
        return None
    answered = {k: _load_answer(a) for k, a in kept.get("answered", {}).items()}
    return Pending(tuple(_load(c) for c in kept.get("calls", ())), bool(kept.get("attempted")), answered,
                   int(kept.get("tries", 1)))


def in_flight(data: Mapping[str, Any], marked_at: datetime.datetime | None, now: datetime.datetime, *,
              request_timeout: float) -> bool:
    """Whether the calls kept in ``data`` may be being made now: marked attempted (at ``marked_at``,
    the row's last write) less than twice the cloud's ``request_timeout`` (and 10 s) ago. The
    worker makes each call once within that timeout, perhaps queued behind as many; an older
    mark is a dead step's, which the step's redelivery clears."""
    kept = of(data)
    limit = datetime.timedelta(seconds=2 * request_timeout + 10)
    return kept is not None and kept.attempted and marked_at is not None and now - marked_at < limit


def attempting(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with its kept calls marked attempted (written before they are made)."""
    kept = of(data)
    assert kept is not None
    return _with(data, dataclasses.replace(kept, attempted=True))


def next_step(data: Mapping[str, Any], version: int, answers: Answers | None, answered: int | None
              ) -> Answers | tuple[dict[str, Any], float]:
    """The step after a Call: its answers (:func:`answers_for`), or the data to write and the
    backoff when calls are to be made again (:func:`retrying`)."""
    got = answers_for(data, version, answers, answered)
    return retrying(data, got) or got


def answers_for(data: Mapping[str, Any], version: int, answers: Answers | None, answered: int | None
                ) -> Answers:
    """What the step after a Call sees: the answers of earlier tries, and those of the calls made
    for this very row version (``answered``); none of these after a crash between making them
    and this step."""
    kept = of(data)
    if kept is None or not kept.attempted:
        return {}
    fresh = (answers or {}) if answered == version else {}
    return {**kept.answered, **fresh}


def retrying(data: Mapping[str, Any], answers: Answers) -> tuple[dict[str, Any], float] | None:
    """When calls failed with errors the worker retries: the data to write and the backoff, else None."""
    kept = of(data)
    if kept is None or kept.tries >= TRIES:
        return None
    methods = {c.key: c.method for c in kept.calls}
    failed = {k for k, a in answers.items()
              if a.error is not None and worth_retrying(methods.get(k, ""), a.error)}
    if not failed:
        return None
    again = Pending(kept.calls, attempted=False, tries=kept.tries + 1,
                    answered={k: a for k, a in answers.items() if k not in failed})
    return _with(data, again), backoff(kept.tries)


def backoff(tries: int) -> float:
    """Seconds before the next try, after ``tries`` tries."""
    return float(min(2 ** tries, 60))


def without(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with no calls kept: what a plugin sees, and what a step that had the answers writes."""
    return {k: v for k, v in data.items() if k != KEY}


def _with(data: Mapping[str, Any], kept: Pending) -> dict[str, Any]:
    shown: dict[str, Any] = {"attempted": kept.attempted, "calls": [_dump(c) for c in kept.calls]}
    if kept.answered:
        shown["answered"] = {k: _dump_answer(a) for k, a in kept.answered.items()}
    if kept.tries != 1:
        shown["tries"] = kept.tries
    return {**data, KEY: shown}


def _dump(call: CloudCall) -> dict[str, Any]:
    return {"key": call.key, "service": call.service.value, "method": call.method, "args": list(call.args),
            "kwargs": dict(call.kwargs)}


def _load(raw: Mapping[str, Any]) -> CloudCall:
    return CloudCall(key=str(raw["key"]), service=Service(raw["service"]), method=str(raw["method"]),
                     args=tuple(raw.get("args", ())), kwargs=dict(raw.get("kwargs", {})))


def _dump_answer(answer: Answer) -> dict[str, Any]:
    if answer.error is None:
        return {"value": answer.value}
    e = answer.error
    return {"error": {"kind": e.kind.value, "message": e.message, "status": e.status,
                      "exception": e.exception, "request_id": e.request_id, "fault_type": e.fault_type}}


def _load_answer(raw: Mapping[str, Any]) -> Answer:
    error = raw.get("error")
    if error is None:
        return Answer(raw.get("value"))
    return Answer(error=CloudError(ErrorKind(error["kind"]), str(error["message"]), error.get("status"),
                                   str(error.get("exception", "ResourceFailure")), error.get("request_id"),
                                   error.get("fault_type")))
