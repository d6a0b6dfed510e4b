"""A server create: the request checked (pure), then the server, its ports and volumes made at once."""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud import netcore
from libs.simcloud.auth import Auth
from libs.simcloud.errors import ApiError
from libs.simcloud.nova import store
from libs.simcloud.nova.lifecycle import Task
from libs.simcloud.state import SimState


@dataclasses.dataclass(frozen=True)
class Nic:
    network_id: str | None = None
    port_id: str | None = None
    fixed_ip: str | None = None


@dataclasses.dataclass(frozen=True)
class Disk:
    source: str  # image | volume | snapshot | blank
    destination: str  # volume | local
    uuid: str | None
    boot_index: int | None
    size: int | None
    delete_on_termination: bool
    device_name: str | None


@dataclasses.dataclass(frozen=True)
class BootRequest:
    name: str
    flavor_id: str
    image_id: str | None
    nics: tuple[Nic, ...] | None  # None: "auto"
    key_name: str | None
    metadata: dict[str, str]
    user_data: str | None
    config_drive: bool
    availability_zone: str | None
    hints: dict[str, Any]
    disks: tuple[Disk, ...]
    security_groups: tuple[str, ...]
    tags: tuple[str, ...]
    extra: dict[str, Any]


def _bad(field: str, detail: str = "") -> ApiError:
    return ApiError(400, f"Invalid input for field/attribute {field}." + (f" {detail}" if detail else ""))


def _nics(value: Any) -> tuple[Nic, ...] | None:
    if value is None or value == "auto":
        return None
    if value == "none":
        return ()
    if not isinstance(value, list):
        raise _bad("networks", f"Value: {value!r}")
    nics = []
    for entry in value:
        if not isinstance(entry, dict) or not (entry.get("uuid") or entry.get("port")):
            raise _bad("networks", "Each network needs a uuid or a port.")
        nics.append(Nic(network_id=entry.get("uuid"), port_id=entry.get("port"),
                        fixed_ip=entry.get("fixed_ip")))
    return tuple(nics)


def _disks(value: Any) -> tuple[Disk, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _bad("block_device_mapping_v2")
    disks = []
    for entry in value:
        if not isinstance(entry, dict):
            raise _bad("block_device_mapping_v2")
        boot_index = entry.get("boot_index")
        size = entry.get("volume_size")
        disks.append(Disk(source=str(entry.get("source_type") or "volume"),
                          destination=str(entry.get("destination_type") or "volume"),
                          uuid=entry.get("uuid") or entry.get("volume_id"),
                          boot_index=int(boot_index) if boot_index not in (None, "none", "") else None,
                          size=int(size) if size not in (None, "") else None,
                          delete_on_termination=bool(entry.get("delete_on_termination")),
                          device_name=entry.get("device_name")))
    return tuple(disks)


def parse(body: dict[str, Any]) -> BootRequest:
    """The create request's ``server`` object (and top-level hints) as a BootRequest; Nova's 400s."""
    spec = body.get("server")
    if not isinstance(spec, dict):
        raise ApiError(400, "Invalid input for field/attribute server.")
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > 255:
        raise _bad("name")
    flavor = spec.get("flavorRef")
    if not flavor:
        raise ApiError(400, "Invalid input for field/attribute flavorRef. Value: None.")
    metadata = spec.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _bad("metadata")
    user_data = spec.get("user_data")
    if user_data is not None:
        try:
            base64.b64decode(user_data, validate=True)
        except (binascii.Error, ValueError, TypeError):
            raise ApiError(400, "User data needs to be valid base 64.") from None
    disks = _disks(spec.get("block_device_mapping_v2"))
    image = spec.get("imageRef") or None
    if image is None and not any(d.boot_index == 0 and d.destination == "volume" for d in disks):
        raise ApiError(400, "Block Device Mapping is Invalid: Boot sequence for the instance and image/block "
                            "device mapping combination is not valid.")
    hints = body.get("OS-SCH-HNT:scheduler_hints") or body.get("os:scheduler_hints") or {}
    groups = spec.get("security_groups") or []
    return BootRequest(
        name=name, flavor_id=str(flavor).rstrip("/").rsplit("/", 1)[-1],
        image_id=str(image).rstrip("/").rsplit("/", 1)[-1] if image else None,
        nics=_nics(spec.get("networks")), key_name=spec.get("key_name"), metadata=metadata,
        user_data=user_data, config_drive=bool(spec.get("config_drive")),
        availability_zone=spec.get("availability_zone"), hints=hints if isinstance(hints, dict) else {},
        disks=disks, security_groups=tuple(str(g.get("name")) for g in groups if isinstance(g, dict)),
        tags=tuple(spec.get("tags") or ()),
        extra={k: spec[k] for k in ("accessIPv4", "accessIPv6", "description", "hostname") if k in spec}
        | ({"disk_config": spec["OS-DCF:diskConfig"]} if "OS-DCF:diskConfig" in spec else {}),
    )


async def _check_refs(conn: Conn, request: BootRequest, caller: Auth) -> None:
    if await conn.fetchval("SELECT 1 FROM simcloud.flavors WHERE id = $1", request.flavor_id) is None:
        raise ApiError(400, f"Flavor {request.flavor_id} could not be found.")
    if request.image_id is not None:
        status = await conn.fetchval("SELECT status FROM simcloud.images WHERE id = $1", request.image_id)
        if status is None:
            raise ApiError(400, f"Image {request.image_id} could not be found.")
        if status != "active":
            raise ApiError(400, f"Image {request.image_id} is not active.")
    if request.key_name is not None and await conn.fetchval(
            "SELECT 1 FROM simcloud.keypairs WHERE user_id = $1 AND name = $2",
            caller.user_id, request.key_name) is None:
        raise ApiError(400, "Invalid key_name provided.")
    for group in request.security_groups:
        # Nova asks Neutron for each group by name or id (the project's own; ``default`` is made
        # on the project's first Neutron call); real Nova 34's answer, measured through Heat.
        if group != "default" and await conn.fetchval(
                "SELECT 1 FROM simcloud.security_groups WHERE (id = $1 OR name = $1) AND project_id = $2",
                group, caller.project_id) is None:
            raise ApiError(400, f"Unable to find security_group with name or id '{group}'")


async def _auto_network(conn: Conn, project_id: str) -> str | None:
    found: str | None = await conn.fetchval(
        "SELECT id FROM simcloud.networks WHERE NOT external AND (project_id = $1 OR shared)"
        " ORDER BY (project_id = $1) DESC, seq LIMIT 1", project_id)
    return found


async def _wire(conn: Conn, state: SimState, request: BootRequest, server_id: str, caller: Auth) -> None:
    try:
        await _nics_of(conn, state, request, server_id, caller)
    except ApiError as exc:
        # Nova answers a bad network, port or address as a bad request; a port in use is a conflict.
        if exc.kind == "PortInUse":
            raise
        raise ApiError(400, exc.message) from None


async def _nics_of(conn: Conn, state: SimState, request: BootRequest, server_id: str, caller: Auth) -> None:
    nics = request.nics
    if nics is None:
        network = await _auto_network(conn, caller.project_id)
        nics = (Nic(network_id=network),) if network else ()
    for nic in nics:
        if nic.port_id:
            await netcore.bind_port(conn, nic.port_id, server_id)
        else:
            assert nic.network_id is not None
            fixed = [{"ip_address": nic.fixed_ip}] if nic.fixed_ip else []
            await netcore.create_port(conn, state.rng, port_id=state.new_id(), project_id=caller.project_id,
                                      network_id=nic.network_id, fixed_ips=fixed, device_id=server_id,
                                      device_owner=netcore.COMPUTE_OWNER, nova_owned=True)


async def _volumes(conn: Conn, state: SimState, request: BootRequest, server_id: str, caller: Auth) -> None:
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    if any(d.source == "volume" for d in request.disks):
        await state.settle("volumes", conn)
    for disk in sorted(request.disks, key=lambda d: (d.boot_index is None, d.boot_index or 0)):
        if disk.destination != "volume":
            continue
        if disk.source == "volume":
            assert disk.uuid is not None
            taken = await conn.fetchval(
                "UPDATE simcloud.volumes SET status = 'in-use', updated_at = now()"
                " WHERE id = $1 AND status = 'available' RETURNING id", disk.uuid)
            if taken is None:
                exists = await conn.fetchval("SELECT status FROM simcloud.volumes WHERE id = $1", disk.uuid)
                if exists is None:
                    raise ApiError(400, f"Block Device Mapping is Invalid: failed to get volume {disk.uuid}.")
                raise ApiError(400, f"Block Device Mapping is Invalid: volume {disk.uuid} status must be "
                                    f"'available', not '{exists}'.")
            volume_id = disk.uuid
        else:
            if not disk.size:
                raise ApiError(400, "Block Device Mapping is Invalid: You specified more local devices than "
                                    "the limit allows or a volume without a size.")
            volume_id = state.new_id()
            await conn.execute(
                "INSERT INTO simcloud.volumes (id, project_id, name, size, status, data)"
                " VALUES ($1, $2, '', $3, 'in-use', $4)", volume_id, caller.project_id, disk.size,
                {"bootable": disk.source == "image", "created_by": "nova",
                 "image_id": disk.uuid if disk.source == "image" else None})
        await conn.execute(
            "INSERT INTO simcloud.volume_attachments"
            " (id, server_id, volume_id, device, delete_on_termination) VALUES ($1, $2, $3, $4, $5)",
            state.new_id(), server_id, volume_id,
            disk.device_name or f"/dev/vd{next(letters)}", disk.delete_on_termination)


async def create(conn: Conn, state: SimState, request: BootRequest, caller: Auth,
                 now: datetime.datetime) -> asyncpg.Record:
    """Make the server (BUILD until boot_seconds from now), its ports and its volumes."""
    server_id = state.new_id()
    async with conn.transaction():
        await _check_refs(conn, request, caller)
        quota = int(state.settings.server_quota)
        if quota > 0:
            used = await conn.fetchval("SELECT count(*) FROM simcloud.servers WHERE project_id = $1",
                                       caller.project_id)
            if used >= quota:
                raise ApiError(403, f"Quota exceeded for instances: Requested 1, but already used {used} of "
                                    f"{quota} instances")
        group_id = request.hints.get("group")
        if group_id:
            joined = await conn.fetchval(
                "UPDATE simcloud.server_groups SET members = array_append(members, $2)"
                " WHERE id = $1 RETURNING id", str(group_id), server_id)
            if joined is None:
                raise ApiError(400, f"Invalid server group {group_id}.")
        data = {"user_data": request.user_data, "config_drive": request.config_drive,
                "availability_zone": request.availability_zone, "scheduler_hints": request.hints,
                "security_groups": list(request.security_groups) or ["default"], **request.extra}
        row = await store.insert(conn, {
            "id": server_id, "project_id": caller.project_id, "user_id": caller.user_id, "name": request.name,
            "status": "BUILD", "task": Task.BOOT.value,
            "due_at": now + datetime.timedelta(seconds=state.settings.boot_seconds), "fails": state.fails(),
            "flavor_id": request.flavor_id, "image_id": request.image_id, "key_name": request.key_name,
            "metadata": request.metadata, "tags": list(request.tags), "created_at": now, "updated_at": now,
            "data": data})
        await _wire(conn, state, request, server_id, caller)
        await _volumes(conn, state, request, server_id, caller)
    return row
