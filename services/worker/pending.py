"""The cloud calls a step asked for, kept in the resource's data until the next step has their answers.

Kept under a reserved key, never shown to a plugin. ``attempted`` is written
and committed before the calls are made: a worker that dies after making them
leaves the mark, and the redelivered step runs the plugin's ``check`` with no
answers (it finds what a lost call made by ``ctx.cloud_tag``) instead of making
them again. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from libs.cloud.calls import Answers, CloudCall, Service

KEY = "ember_calls"


@dataclasses.dataclass(frozen=True)
class Pending:
    calls: tuple[CloudCall, ...]
    attempted: bool


def recorded(data: Mapping[str, Any], calls: Sequence[CloudCall], *, attempted: bool) -> dict[str, Any]:
    """``data`` with ``calls`` kept under :data:`KEY`."""
    return {**data, KEY: {"attempted": attempted, "calls": [_dump(c) for c in calls]}}


def of(data: Mapping[str, Any]) -> Pending | None:
    """The calls kept in ``data``, if any."""
    kept = data.get(KEY)
    if not isinstance(kept, dict):
        return None
    return Pending(tuple(_load(c) for c in kept.get("calls", ())), bool(kept.get("attempted")))


def answers_for(data: Mapping[str, Any], version: int, answers: Answers | None, answered: int | None
                ) -> Answers:
    """What the step after a Call sees: the answers of the calls made for this very row version
    (``answered``); none after a crash between making them and this step, or with no calls kept."""
    kept = of(data)
    if kept is None or not kept.attempted or answered != version:
        return {}
    return answers or {}


def attempting(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with its kept calls marked attempted (written before they are made)."""
    kept = data.get(KEY)
    assert isinstance(kept, dict)
    return {**data, KEY: {**kept, "attempted": True}}


def without(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with no calls kept: what a plugin sees, and what a step that had the answers writes."""
    return {k: v for k, v in data.items() if k != KEY}


def _dump(call: CloudCall) -> dict[str, Any]:
    return {"key": call.key, "service": call.service.value, "method": call.method, "args": list(call.args),
            "kwargs": dict(call.kwargs)}


def _load(raw: Mapping[str, Any]) -> CloudCall:
    return CloudCall(key=str(raw["key"]), service=Service(raw["service"]), method=str(raw["method"]),
                     args=tuple(raw.get("args", ())), kwargs=dict(raw.get("kwargs", {})))
