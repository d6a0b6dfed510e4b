"""Finding what a create whose answer was lost made, so it is adopted rather than made twice.

Neutron takes no tags in a create (real Neutron refuses ``tags`` in POST, or drops them
for ports), so Ember tags an object in a second call, ``set_tags``, right after its
create, and also writes its tag in the object's description when the template leaves
that empty. An object is therefore found by its tag, or, if the crash fell between
the two calls, by its description; failing that (the template set a description), as
the only untagged object of the name Ember gave that was made since the action began.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Mapping, Sequence
from typing import Any, Final

from libs.cloud.calls import Answers, CloudCall, Service
from libs.resources.neutron import wire
from libs.resources.steps import Failed

TAGGED_KEY: Final = "adopt"
NAMED_KEY: Final = "adopt_named"
# How much earlier than the action's start the cloud's clock may date an object Ember made.
CLOCK_SKEW: Final = 300.0


@dataclasses.dataclass(frozen=True)
class Found:
    """What the listings found: the object (None: nothing), and whether it still lacks its tags."""

    obj: Mapping[str, Any] | None
    untagged: bool = False


def listings(listing: str, tag: str, named: Mapping[str, Any] | None) -> tuple[CloudCall, ...]:
    """The listing by tag, and the one by name (or description) when the type has one."""
    calls = [CloudCall(TAGGED_KEY, Service.NETWORK, listing, kwargs={"tags": tag})]
    if named:
        calls.append(CloudCall(NAMED_KEY, Service.NETWORK, listing, kwargs=dict(named)))
    return tuple(calls)


def made_since(view: Mapping[str, Any], started_at: float) -> bool:
    """Whether the object was made after the action began (an object with no date may have been)."""
    created = view.get("created_at")
    if not isinstance(created, str) or not created:
        return True
    try:
        when = datetime.datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return True
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    return when.timestamp() >= started_at - CLOCK_SKEW


def found(calls: Sequence[CloudCall], answers: Answers, started_at: float, tag: str,
          pick: Any) -> Found | Failed | None:
    """What the listings of ``calls`` found; None if an answer was lost.

    ``pick`` chooses among the tagged listing (a rule of a group matches by its content).
    """
    if any(c.key not in answers for c in calls):
        return None
    for call in calls:
        error = answers[call.key].error
        if error is not None:
            return wire.failed(error)
    tagged = pick(list(answers[TAGGED_KEY].value or ()))
    if tagged is not None:
        return Found(tagged)
    named = answers.get(NAMED_KEY)
    candidates = [obj for obj in ((named.value or ()) if named is not None else ())
                  if _ours(wire.neutron_view(obj), started_at, tag)]
    described = [obj for obj in candidates if wire.neutron_view(obj).get("description") == tag]
    if described:
        return Found(described[0], untagged=True)
    # By name, only when one object can be ours: adopting a sibling's (a group's members may
    # share a name) would be worse than leaving one behind.
    return Found(candidates[0], untagged=True) if len(candidates) == 1 else Found(None)


def _ours(view: Mapping[str, Any], started_at: float, tag: str) -> bool:
    if view.get("description") == tag:
        return True
    return not view.get("tags") and made_since(view, started_at)
