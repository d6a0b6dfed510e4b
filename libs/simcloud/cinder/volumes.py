"""Cinder's volumes, pure: a create request checked, the status a timestamp settles, the JSON view.

A volume in a transition (``creating``, ``extending``, ``retyping``, ``deleting``) holds in
``data`` the status it goes to (``next_status``; ``deleted`` means the row goes) and when
(``ready_at``, epoch seconds): the answer is computed from the clock, no timer runs.
"""

from __future__ import annotations

import ast
import dataclasses
import datetime
import json
from collections.abc import Mapping, Sequence
from typing import Any

import asyncpg

from libs.simcloud.errors import ApiError, bad_request

Body = dict[str, Any]
Row = Mapping[str, Any] | asyncpg.Record
ZONE = "nova"
DELETABLE = ("available", "error", "error_restoring", "error_extending", "error_managing")
GONE = "deleted"


def invalid_volume(reason: str) -> ApiError:
    return ApiError(400, f"Invalid volume: {reason}", "InvalidVolume")


def invalid_input(reason: str) -> ApiError:
    return bad_request(f"Invalid input received: {reason}")


@dataclasses.dataclass(frozen=True)
class Transition:
    status: str        # the status shown meanwhile
    next_status: str   # the status after ``seconds``
    seconds: float

    def data(self, now: float) -> dict[str, Any]:
        return {"next_status": self.next_status, "ready_at": now + self.seconds}


def settled(status: str, data: Mapping[str, Any], now: float) -> str:
    """The status a stored volume has at ``now`` (``deleted``: gone)."""
    target = data.get("next_status")
    if target and float(data.get("ready_at") or 0) <= now:
        return str(target)
    return status


def check_size(size: Any) -> int:
    if isinstance(size, bool) or not isinstance(size, int | str) or not str(size).isdigit() or int(size) < 1:
        raise invalid_input(f"Volume size '{size}' must be an integer and greater than 0")
    return int(size)


def check_zone(zone: Any) -> str:
    if zone in (None, ""):
        return ZONE
    if zone != ZONE:
        raise invalid_input(f"Availability zone '{zone}' is invalid.")
    return ZONE


def check_metadata(metadata: Any) -> dict[str, str]:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise invalid_input("Metadata must be a dict")
    for key, value in metadata.items():
        if not key or len(str(key)) > 255:
            raise invalid_input("Metadata property key blank or greater than 255 characters.")
        if not isinstance(value, str) or len(value) > 255:
            raise invalid_input(f"Metadata property value for key {key} must be a string of at most "
                                "255 characters.")
    return {str(k): v for k, v in metadata.items()}


def metadata_filter(raw: str) -> dict[str, str]:
    """``metadata={'k': 'v'}`` as Cinder reads it (a Python or JSON literal)."""
    try:
        value = json.loads(raw)
    except ValueError:
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            raise invalid_input(f"Invalid filter metadata {raw}") from None
    if not isinstance(value, dict):
        raise invalid_input(f"Invalid filter metadata {raw}")
    return {str(k): str(v) for k, v in value.items()}


def cinder_time(moment: datetime.datetime | None) -> str | None:
    """Cinder's timestamps: microseconds, no zone."""
    if moment is None:
        return None
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


def attachment_view(row: Row) -> Body:
    return {"id": row["id"], "attachment_id": row["id"], "volume_id": row["volume_id"],
            "server_id": row["server_id"], "host_name": None, "device": row["device"],
            "attached_at": cinder_time(row["created_at"])}


def status_with(status: str, attachments: Sequence[Row]) -> str:
    """A volume Nova attached is in-use; one it let go is available (Nova writes rows, not statuses only)."""
    if status == "available" and attachments:
        return "in-use"
    if status == "in-use" and not attachments:
        return "available"
    return status


def view(row: Row, attachments: Sequence[Row], type_name: str, now: float,
         base: str, *, admin: bool) -> Body:
    """The volume as Cinder 3.x shows it in ``/volumes/detail`` and ``/volumes/{id}``."""
    data = dict(row["data"] or {})
    status = status_with(settled(row["status"], data, now), attachments)
    link = f"{base}/volumes/{row['id']}"
    body: Body = {
        "id": row["id"], "name": row["name"] or None, "description": data.get("description"),
        "size": row["size"], "status": status, "availability_zone": data.get("availability_zone", ZONE),
        "bootable": "true" if data.get("bootable") else "false", "encrypted": False,
        "multiattach": bool(data.get("multiattach", False)), "volume_type": type_name,
        "snapshot_id": data.get("snapshot_id"), "source_volid": data.get("source_volid"),
        "metadata": dict(data.get("metadata") or {}),
        "attachments": [attachment_view(a) for a in attachments],
        "user_id": data.get("user_id"), "created_at": cinder_time(row["created_at"]),
        "updated_at": cinder_time(row["updated_at"]), "replication_status": None,
        "consistencygroup_id": None, "group_id": None, "provider_id": None, "service_uuid": None,
        "shared_targets": False, "cluster_name": None, "consumes_quota": True,
        "os-vol-mig-status-attr:migstat": None, "os-vol-mig-status-attr:name_id": None,
        "links": [{"rel": "self", "href": link}, {"rel": "bookmark", "href": link}],
    }
    if data.get("image_id"):
        body["volume_image_metadata"] = {"image_id": data["image_id"]}
    if admin:
        body["os-vol-tenant-attr:tenant_id"] = row["project_id"]
        body["os-vol-host-attr:host"] = "simcloud@lvm#lvm"
    return body
