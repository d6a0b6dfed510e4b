"""Payloads round-trip through bytes; anything else is a PayloadError (terminated, not retried)."""

from __future__ import annotations

import orjson
import pytest

from libs.messaging.payloads import PayloadError, PlanRequest, Probe, WorkItem, decode


@pytest.mark.parametrize(
    "payload",
    [
        PlanRequest(project="demo", stack_id="s1", reason="create"),
        WorkItem(stack_id="s1", traversal_id="t1", node="server:update"),
        Probe(probe_id="p", reply_to="_INBOX.x", expires_at=1.5),
    ],
)
def test_round_trip(payload: object) -> None:
    assert decode(payload.to_bytes()) == payload  # type: ignore[attr-defined]


def test_work_item_message_id_is_the_node_key() -> None:
    assert WorkItem(stack_id="s", traversal_id="t", node="n").msg_id == "s:t:n"


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"not json", "not JSON"),
        (b"[1]", "not a JSON object"),
        (orjson.dumps({"kind": "plan", "v": 99}), "schema version 99"),
        (orjson.dumps({"kind": "mystery", "v": 1}), "unknown payload kind"),
        (orjson.dumps({"kind": "plan", "v": 1, "project": "p"}), "missing stack_id, reason"),
    ],
)
def test_bad_payloads(raw: bytes, fragment: str) -> None:
    with pytest.raises(PayloadError, match=fragment):
        decode(raw)


def test_unknown_fields_from_a_newer_minor_writer_are_ignored() -> None:
    raw = orjson.dumps({"kind": "plan", "v": 1, "project": "p", "stack_id": "s", "reason": "r", "x": 1})
    assert decode(raw) == PlanRequest(project="p", stack_id="s", reason="r")


def test_probe_expiry() -> None:
    probe = Probe(probe_id="p", reply_to="r", expires_at=100.0)
    assert not probe.expired(99.0)
    assert probe.expired(100.5)
