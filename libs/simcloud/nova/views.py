"""A server as Nova shows it (2.1 to 2.96), from its row and what it relates to."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud import netcore
from libs.simcloud.microversion import Version
from libs.simcloud.nova import flavors, store
from libs.simcloud.nova.lifecycle import Task, shown
from libs.simcloud.state import iso

HOST_ID = "5a6c2b3e1f0d4e8a9b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c"


@dataclasses.dataclass(frozen=True)
class Context:
    base: str  # scheme://host
    version: Version
    is_admin: bool


@dataclasses.dataclass(frozen=True)
class Related:
    """What a page of servers shows besides its rows: flavors, addresses, volumes, groups."""

    flavors: dict[str, asyncpg.Record]
    addresses: dict[str, dict[str, list[dict[str, Any]]]]
    volumes: dict[str, list[asyncpg.Record]]
    groups: dict[str, list[str]]


async def related(conn: Conn, rows: Sequence[asyncpg.Record]) -> Related:
    ids = [r["id"] for r in rows]
    flavor_ids = list({r["flavor_id"] for r in rows} | {r["old_flavor_id"] for r in rows
                                                        if r["old_flavor_id"]})
    found = await conn.fetch("SELECT * FROM simcloud.flavors WHERE id = ANY($1)", flavor_ids)
    volumes: dict[str, list[asyncpg.Record]] = {}
    for attachment in await store.attachments(conn, ids):
        volumes.setdefault(attachment["server_id"], []).append(attachment)
    groups: dict[str, list[str]] = {}
    for group in await store.groups(conn, ids):
        for member in group["members"]:
            groups.setdefault(member, []).append(group["id"])
    return Related({f["id"]: f for f in found}, await netcore.addresses(conn, ids), volumes, groups)


def links(base: str, kind: str, object_id: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/{kind}/{object_id}"},
            {"rel": "bookmark", "href": f"{base}/compute/{kind}/{object_id}"}]


def brief(row: asyncpg.Record, ctx: Context) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "links": links(ctx.base, "servers", row["id"])}


def _flavor(row: asyncpg.Record, related: Related, ctx: Context) -> dict[str, Any]:
    flavor = related.flavors.get(row["flavor_id"])
    if ctx.version >= (2, 47):
        if flavor is None:  # deleted since: Nova keeps a copy; we keep the id's name
            return {"vcpus": 0, "ram": 0, "disk": 0, "ephemeral": 0, "swap": 0,
                    "original_name": row["flavor_id"], "extra_specs": {}}
        return flavors.embedded(flavor)
    return {"id": row["flavor_id"], "links": links(ctx.base, "flavors", row["flavor_id"])[1:]}


def detail(row: asyncpg.Record, related: Related, ctx: Context) -> dict[str, Any]:
    data = row["data"]
    task = Task(row["task"]) if row["task"] else None
    state = shown(row["status"], task)
    image: Any = ({"id": row["image_id"], "links": links(ctx.base, "images", row["image_id"])[1:]}
                  if row["image_id"] else "")
    result: dict[str, Any] = {
        "id": row["id"], "name": row["name"], "status": row["status"],
        "tenant_id": row["project_id"], "user_id": row["user_id"], "metadata": row["metadata"],
        "hostId": "" if row["status"] == "BUILD" else HOST_ID,
        "image": image, "flavor": _flavor(row, related, ctx),
        "created": iso(row["created_at"]), "updated": iso(row["updated_at"]),
        "addresses": related.addresses.get(row["id"], {}),
        "accessIPv4": data.get("accessIPv4", ""), "accessIPv6": data.get("accessIPv6", ""),
        "links": links(ctx.base, "servers", row["id"]),
        "OS-DCF:diskConfig": data.get("disk_config", "MANUAL"),
        "progress": 0,
        "OS-EXT-AZ:availability_zone": data.get("availability_zone") or "nova",
        "config_drive": "True" if data.get("config_drive") else "",
        "key_name": row["key_name"],
        "OS-SRV-USG:launched_at": (iso(row["launched_at"]) or "").rstrip("Z") or None,
        "OS-SRV-USG:terminated_at": None,
        "security_groups": [{"name": name} for name in data.get("security_groups", ["default"])],
        "OS-EXT-STS:task_state": state.task_state, "OS-EXT-STS:vm_state": state.vm_state,
        "OS-EXT-STS:power_state": state.power_state,
        "os-extended-volumes:volumes_attached": [
            {"id": v["volume_id"], "delete_on_termination": v["delete_on_termination"]}
            for v in related.volumes.get(row["id"], [])],
    }
    if row["status"] == "ERROR" and row["fault"]:
        result["fault"] = row["fault"]
    if ctx.is_admin:
        result.update({"OS-EXT-SRV-ATTR:host": "simcloud", "OS-EXT-SRV-ATTR:hypervisor_hostname": "simcloud",
                       "OS-EXT-SRV-ATTR:instance_name": f"instance-{row['seq']:08x}"})
        if ctx.version >= (2, 3):
            result.update({"OS-EXT-SRV-ATTR:user_data": data.get("user_data"),
                           "OS-EXT-SRV-ATTR:reservation_id": data.get("reservation_id", ""),
                           "OS-EXT-SRV-ATTR:launch_index": 0, "OS-EXT-SRV-ATTR:kernel_id": "",
                           "OS-EXT-SRV-ATTR:ramdisk_id": "", "OS-EXT-SRV-ATTR:root_device_name": "/dev/vda",
                           "OS-EXT-SRV-ATTR:hostname": row["name"]})
    if ctx.version >= (2, 9):
        result["locked"] = bool(data.get("locked"))
    if ctx.version >= (2, 16):
        result["host_status"] = "UP" if ctx.is_admin else ""
    if ctx.version >= (2, 19):
        result["description"] = data.get("description")
    if ctx.version >= (2, 26):
        result["tags"] = list(row["tags"])
    if ctx.version >= (2, 63):
        result["trusted_image_certificates"] = None
    if ctx.version >= (2, 71):
        result["server_groups"] = related.groups.get(row["id"], [])
    if ctx.version >= (2, 73):
        result["locked_reason"] = data.get("locked_reason")
    if ctx.version >= (2, 90):
        result["OS-EXT-SRV-ATTR:hostname"] = data.get("hostname", row["name"])
    if ctx.version >= (2, 96):
        result["pinned_availability_zone"] = data.get("availability_zone")
    return result
