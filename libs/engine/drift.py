"""Drift: how a resource the cloud shows differs from what Ember recorded, and what a new sight changes.

Pure decisions over data. The observer lists the cloud, hands each resource's
entry to its type (``observe_listed``) and asks here whether that is drift
(:func:`seen`) and what to record given the drift already open for the
resource (:func:`reconcile`): a record is written once per change, never once
per poll, and closed when the cloud agrees with the record again.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping
from typing import Any

from libs.resources.steps import Observed
from libs.template.convergence import DriftPolicy, FieldPolicy, ResourcePolicy

# How drift events' reasons begin (CHECK_FAILED and CHECK_COMPLETE, as Heat's stack check):
# what follows is Drift.describe's text.
DETECTED = "Resource drift detected"
RESOLVED = "Resource drift resolved"


class DriftKind(enum.StrEnum):
    GONE = "gone"
    ERROR = "error"
    CHANGED = "changed"


@dataclasses.dataclass(frozen=True)
class Drift:
    kind: DriftKind
    # For CHANGED: the properties whose values the cloud shows otherwise, sorted.
    fields: tuple[str, ...] = ()
    # For ERROR: the cloud's reason.
    detail: str = ""

    def describe(self, resource_name: str) -> str:
        """What an event says about it."""
        if self.kind == DriftKind.GONE:
            return f"{resource_name} is gone from the cloud"
        if self.kind == DriftKind.ERROR:
            return f"{resource_name} is in an error state: {self.detail}" if self.detail else (
                f"{resource_name} is in an error state")
        return f"{resource_name} changed outside Ember: {', '.join(self.fields)}"


def seen(applied: Mapping[str, Any] | None, observed: Observed | None) -> Drift | None:
    """The drift in what the cloud shows of a resource, or None when it agrees with ``applied``.

    ``observed`` None: the type reads nothing back, so nothing can be said.
    """
    if observed is None:
        return None
    if observed.gone:
        return Drift(DriftKind.GONE)
    if observed.error is not None:
        return Drift(DriftKind.ERROR, detail=observed.error)
    applied = applied or {}
    fields = tuple(sorted(k for k, v in observed.properties.items() if applied.get(k) != v))
    return Drift(DriftKind.CHANGED, fields=fields) if fields else None


@dataclasses.dataclass(frozen=True)
class Change:
    """What a sight does to the records: close the open one, open a new one, both, or neither."""

    close: bool = False
    open: Drift | None = None

    @property
    def nothing(self) -> bool:
        return not self.close and self.open is None


def reconcile(open_drift: Drift | None, now: Drift | None) -> Change:
    """The records' change when ``now`` is seen and ``open_drift`` is the resource's open record."""
    if open_drift == now:
        return Change()
    return Change(close=open_drift is not None, open=now)


class Response(enum.StrEnum):
    """What was done about a drift (its record's ``action_taken``)."""

    REPORTED = "reported"
    HEALING = "healing"      # a converge traversal of the stack was asked for
    HEALED = "healed"        # closed once the heal made the cloud agree
    HEAL_FAILED = "heal failed"  # the heal's traversal failed the stack: the drift is still there
    ACCEPTED = "accepted"    # the cloud's values taken into the record: closed at once
    LIMIT = "reported: heal limit reached"

    def said(self, accepted: Iterable[str] = ()) -> str:
        """What an event or a marker adds to the drift's description (after it, from "; ")."""
        if self == Response.REPORTED:
            return ""
        if self == Response.LIMIT:
            return "; not healed: heal limit reached"
        fields = ", ".join(accepted) if self == Response.ACCEPTED else ""
        return f"; {self.value} {fields}" if fields else f"; {self.value}"


class Closed(enum.Enum):
    """Why a drift record closed: the cloud agrees again, or the record's resource is no longer current."""

    AGREES = "agrees with the cloud again"
    MADE_AGAIN = "was made again"        # replaced (by a heal or an update): the new one is watched
    REMOVED = "is no longer in the stack"

    def describe(self, resource_name: str) -> str:
        """What the resolved event says after RESOLVED."""
        return f"{resource_name} {self.value}"


@dataclasses.dataclass(frozen=True)
class Verdict:
    # What is recorded: the drift without ignored fields (None: nothing left to record).
    drift: Drift | None
    response: Response = Response.REPORTED
    # The fields whose cloud values go into the record (``accept``).
    accepted: tuple[str, ...] = ()


def counted(policy: ResourcePolicy, fields: Iterable[str]) -> tuple[str, ...]:
    """The fields a heal puts back: neither ignored nor accepted (a converge traversal skips those too)."""
    return tuple(f for f in fields if policy.field(f) == FieldPolicy.REVERT)


def respond(drift: Drift | None, policy: ResourcePolicy, *, heals_left: bool) -> Verdict:
    """What a drift seen under ``policy`` does: reported, healed, its fields accepted, or nothing.

    ``ignore`` fields are never drift. Under ``observe`` the rest is reported; under
    ``heal`` accepted fields go into the record and the others (or a resource gone or in
    error) are put back by a converge traversal of its stack (a nested one on its own, as a
    group's scaling does), while ``heals_left``.
    """
    if drift is None:
        return Verdict(None)
    if drift.kind == DriftKind.CHANGED:
        kept = tuple(f for f in drift.fields if policy.field(f) != FieldPolicy.IGNORE)
        if not kept:
            return Verdict(None)
        drift = dataclasses.replace(drift, fields=kept)
    if policy.policy == DriftPolicy.OBSERVE:
        return Verdict(drift)
    accepted = tuple(f for f in drift.fields if policy.field(f) == FieldPolicy.ACCEPT)
    if drift.kind == DriftKind.CHANGED and not counted(policy, drift.fields):
        return Verdict(drift, Response.ACCEPTED, accepted)
    return Verdict(drift, Response.HEALING if heals_left else Response.LIMIT, accepted)


@dataclasses.dataclass(frozen=True)
class Shown:
    """A drift as its event carries it (``resource_properties``), which the notifier sends on."""

    drift: Drift
    action_taken: Response
    resolved: bool

    def properties(self) -> dict[str, Any]:
        return {"drift": {"kind": self.drift.kind.value, "fields": list(self.drift.fields),
                          "detail": self.drift.detail, "action_taken": self.action_taken.value,
                          "resolved": self.resolved}}

    @classmethod
    def of(cls, properties: Any) -> Shown | None:
        """The drift an event's properties carry; None for any other event."""
        shown = properties.get("drift") if isinstance(properties, Mapping) else None
        if not isinstance(shown, Mapping):
            return None
        drift = Drift(DriftKind(shown["kind"]), tuple(str(f) for f in shown.get("fields") or ()),
                      str(shown.get("detail", "")))
        return cls(drift, Response(shown["action_taken"]), bool(shown.get("resolved")))
