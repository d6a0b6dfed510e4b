"""Cinder's pure parts: statuses settled by the clock, request checks, the volume's view."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from libs.simcloud.cinder import volumes
from libs.simcloud.errors import ApiError


@pytest.mark.parametrize(("status", "data", "now", "expected"), [
    ("creating", {"next_status": "available", "ready_at": 10.0}, 9.9, "creating"),
    ("creating", {"next_status": "available", "ready_at": 10.0}, 10.0, "available"),
    ("deleting", {"next_status": "deleted", "ready_at": 5.0}, 6.0, "deleted"),
    ("available", {}, 100.0, "available"),
])
def test_settled(status: str, data: dict[str, Any], now: float, expected: str) -> None:
    assert volumes.settled(status, data, now) == expected


@pytest.mark.parametrize(("status", "attached", "shown"), [
    ("available", True, "in-use"), ("in-use", False, "available"), ("in-use", True, "in-use"),
    ("creating", False, "creating"),
])
def test_status_follows_attachments(status: str, attached: bool, shown: str) -> None:
    rows = [{"id": "a"}] if attached else []
    assert volumes.status_with(status, rows) == shown


@pytest.mark.parametrize("size", [0, -1, "x", None, True, 1.5])
def test_bad_sizes(size: Any) -> None:
    with pytest.raises(ApiError, match="must be an integer and greater than 0"):
        volumes.check_size(size)


@pytest.mark.parametrize(("raw", "parsed"), [
    ('{"k": "v"}', {"k": "v"}), ("{'k': 'v'}", {"k": "v"}),
])
def test_metadata_filter(raw: str, parsed: dict[str, str]) -> None:
    assert volumes.metadata_filter(raw) == parsed


def test_view() -> None:
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    row = {"id": "v", "project_id": "p", "name": "", "size": 2, "status": "creating", "created_at": moment,
           "updated_at": moment, "data": {"next_status": "available", "ready_at": 1.0, "image_id": "i"}}
    attachment = {"id": "a", "volume_id": "v", "server_id": "s", "device": "/dev/vdb", "created_at": moment}
    body = volumes.view(row, [attachment], "__DEFAULT__", 2.0, "http://x/volume/v3/p", admin=False)
    assert body["status"] == "in-use" and body["name"] is None and body["bootable"] == "false"
    assert body["attachments"][0]["server_id"] == "s" and body["created_at"] == "2026-01-02T03:04:05.000000"
    assert body["volume_image_metadata"] == {"image_id": "i"}
    assert "os-vol-tenant-attr:tenant_id" not in body
