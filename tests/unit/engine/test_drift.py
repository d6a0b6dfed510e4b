"""The drift decisions: what a sight of the cloud is, and what it changes in the records."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.drift import (
    Change,
    Closed,
    Drift,
    DriftKind,
    Response,
    Shown,
    Verdict,
    counted,
    reconcile,
    respond,
    seen,
)
from libs.resources.steps import Observed
from libs.template.convergence import DriftPolicy, FieldPolicy, ResourcePolicy

APPLIED = {"name": "web", "metadata": {"a": "1"}, "flavor": "m1.tiny"}

SEEN: list[tuple[str, dict[str, Any] | None, Observed | None, Drift | None]] = [
    ("a type that reads nothing back", APPLIED, None, None),
    ("as recorded", APPLIED, Observed(properties={"name": "web", "metadata": {"a": "1"}}), None),
    ("nothing live", APPLIED, Observed(), None),
    ("gone", APPLIED, Observed(gone=True), Drift(DriftKind.GONE)),
    ("gone wins over what it showed", APPLIED, Observed(properties={"name": "x"}, gone=True),
     Drift(DriftKind.GONE)),
    ("in error", APPLIED, Observed(properties={"name": "x"}, error="Went to status ERROR"),
     Drift(DriftKind.ERROR, detail="Went to status ERROR")),
    ("renamed", APPLIED, Observed(properties={"name": "db"}), Drift(DriftKind.CHANGED, fields=("name",))),
    ("fields sorted", APPLIED, Observed(properties={"name": "db", "metadata": {}, "flavor": "m1.tiny"}),
     Drift(DriftKind.CHANGED, fields=("metadata", "name"))),
    ("a property never applied", {}, Observed(properties={"name": "db"}),
     Drift(DriftKind.CHANGED, fields=("name",))),
    ("no applied properties at all", None, Observed(properties={"name": None}), None),
]


@pytest.mark.parametrize(("why", "applied", "observed", "expected"), SEEN, ids=[c[0] for c in SEEN])
def test_seen(why: str, applied: dict[str, Any] | None, observed: Observed | None,
              expected: Drift | None) -> None:
    assert seen(applied, observed) == expected


GONE, RENAMED = Drift(DriftKind.GONE), Drift(DriftKind.CHANGED, fields=("name",))
RECONCILE: list[tuple[str, Drift | None, Drift | None, Change]] = [
    ("nothing before, nothing now", None, None, Change()),
    ("first sight", None, GONE, Change(open=GONE)),
    ("seen again: no second record", GONE, Drift(DriftKind.GONE), Change()),
    ("repaired by hand", RENAMED, None, Change(close=True)),
    ("changed into another drift", RENAMED, GONE, Change(close=True, open=GONE)),
    ("another field changed too", RENAMED, Drift(DriftKind.CHANGED, fields=("metadata", "name")),
     Change(close=True, open=Drift(DriftKind.CHANGED, fields=("metadata", "name")))),
]


@pytest.mark.parametrize(("why", "before", "now", "expected"), RECONCILE, ids=[c[0] for c in RECONCILE])
def test_reconcile(why: str, before: Drift | None, now: Drift | None, expected: Change) -> None:
    assert reconcile(before, now) == expected
    assert reconcile(before, now).nothing == (expected == Change())


@pytest.mark.parametrize(("drift", "text"), [
    (GONE, "server is gone from the cloud"),
    (Drift(DriftKind.ERROR, detail="boom"), "server is in an error state: boom"),
    (Drift(DriftKind.ERROR), "server is in an error state"),
    (Drift(DriftKind.CHANGED, fields=("metadata", "name")), "server changed outside Ember: metadata, name"),
])
def test_describe(drift: Drift, text: str) -> None:
    assert drift.describe("server") == text


@pytest.mark.parametrize(("response", "accepted", "text"), [
    (Response.REPORTED, (), ""),
    (Response.HEALING, (), "; healing"),
    (Response.HEALED, (), "; healed"),
    (Response.HEAL_FAILED, (), "; heal failed"),
    (Response.ACCEPTED, ("name", "metadata"), "; accepted name, metadata"),
    (Response.ACCEPTED, (), "; accepted"),
    (Response.LIMIT, (), "; not healed: heal limit reached"),
    (Response.HEALING, ("name",), "; healing"),  # only an acceptance names its fields
])
def test_what_was_done_reads_the_same_in_events_and_markers(response: Response, accepted: tuple[str, ...],
                                                            text: str) -> None:
    assert response.said(accepted) == text


@pytest.mark.parametrize(("closed", "text"), [
    (Closed.AGREES, "web agrees with the cloud again"),
    (Closed.MADE_AGAIN, "web was made again"),
    (Closed.REMOVED, "web is no longer in the stack"),
])
def test_why_a_record_closed(closed: Closed, text: str) -> None:
    assert closed.describe("web") == text


CHANGED = Drift(DriftKind.CHANGED, fields=("metadata", "name"))
META = Drift(DriftKind.CHANGED, fields=("metadata",))
HEAL_ALL = ResourcePolicy(DriftPolicy.HEAL)
FIELDS = ResourcePolicy(DriftPolicy.HEAL, {"name": FieldPolicy.IGNORE, "metadata": FieldPolicy.ACCEPT})
RESPOND: list[tuple[str, Drift | None, ResourcePolicy, bool, Verdict]] = [
    ("nothing seen", None, HEAL_ALL, True, Verdict(None)),
    ("observe reports", CHANGED, ResourcePolicy(DriftPolicy.OBSERVE), True, Verdict(CHANGED)),
    ("observe still ignores", CHANGED, ResourcePolicy(DriftPolicy.OBSERVE, {"name": FieldPolicy.IGNORE}),
     True, Verdict(META)),
    ("every field ignored: no drift", Drift(DriftKind.CHANGED, fields=("name",)), FIELDS, True,
     Verdict(None)),
    ("heal reverts", CHANGED, HEAL_ALL, True, Verdict(CHANGED, Response.HEALING)),
    ("heal accepts what it should", CHANGED, FIELDS, True,
     Verdict(Drift(DriftKind.CHANGED, fields=("metadata",)), Response.ACCEPTED, ("metadata",))),
    ("accepted and reverted together", Drift(DriftKind.CHANGED, fields=("flavor", "metadata")), FIELDS, True,
     Verdict(Drift(DriftKind.CHANGED, fields=("flavor", "metadata")), Response.HEALING, ("metadata",))),
    ("gone is healed", GONE, FIELDS, True, Verdict(GONE, Response.HEALING)),
    ("in error is healed", Drift(DriftKind.ERROR, detail="x"), HEAL_ALL, True,
     Verdict(Drift(DriftKind.ERROR, detail="x"), Response.HEALING)),
    ("no heals left: reported", GONE, HEAL_ALL, False, Verdict(GONE, Response.LIMIT)),
    ("no heals left, only accepted fields: still accepted", META, FIELDS, False,
     Verdict(META, Response.ACCEPTED, ("metadata",))),
]


@pytest.mark.parametrize(("why", "drift", "policy", "heals_left", "expected"), RESPOND,
                         ids=[c[0] for c in RESPOND])
def test_respond(why: str, drift: Drift | None, policy: ResourcePolicy, heals_left: bool,
                 expected: Verdict) -> None:
    assert respond(drift, policy, heals_left=heals_left) == expected


def test_counted_fields_are_those_a_heal_puts_back() -> None:
    assert counted(FIELDS, ["flavor", "name", "metadata"]) == ("flavor",)
    assert counted(HEAL_ALL, ["name"]) == ("name",)


@pytest.mark.parametrize("properties", [None, {}, {"name": "web"}, {"drift": "gone"}, ["drift"]])
def test_an_event_that_carries_no_drift_shows_none(properties: Any) -> None:
    assert Shown.of(properties) is None


def test_a_drift_event_carries_what_its_notice_says() -> None:
    shown = Shown(Drift(DriftKind.CHANGED, fields=("metadata", "name")), Response.HEALING, resolved=False)
    assert Shown.of(shown.properties()) == shown
