"""``/servers/{id}/os-volume_attachments``: a Cinder volume attached to a server, as Nova answers.

Rows of ``simcloud.volume_attachments`` (the frame's); attaching sets the volume
``in-use``, detaching ``available`` (Cinder shows the transition from ``updated_at``).
"""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from libs.simcloud import jsonweb
from libs.simcloud.errors import ApiError
from libs.simcloud.microversion import microversion_of
from libs.simcloud.nova import servers
from libs.simcloud.state import STATE


def view(row: asyncpg.Record, request: web.Request) -> dict[str, Any]:
    result: dict[str, Any] = {"serverId": row["server_id"], "volumeId": row["volume_id"],
                              "device": row["device"]}
    version = microversion_of(request)
    if version < (2, 89):
        result["id"] = row["volume_id"]
    else:
        result.update({"attachment_id": row["id"], "bdm_uuid": row["id"]})
    if version >= (2, 70):
        result["tag"] = row["tag"]
    if version >= (2, 79):
        result["delete_on_termination"] = row["delete_on_termination"]
    return result


async def list_attachments(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await servers.server(request, conn)
        found = await conn.fetch(
            "SELECT * FROM simcloud.volume_attachments WHERE server_id = $1 ORDER BY device", row["id"])
    return jsonweb.reply({"volumeAttachments": [view(a, request) for a in found]})


async def show(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await servers.server(request, conn)
        found = await conn.fetchrow("SELECT * FROM simcloud.volume_attachments WHERE server_id = $1"
                                    " AND volume_id = $2", row["id"], request.match_info["volume_id"])
    if found is None:
        raise ApiError(404, f"Volume {request.match_info['volume_id']} is not attached to {row['id']}")
    return jsonweb.reply({"volumeAttachment": view(found, request)})


def _next_device(used: list[str]) -> str:
    for letter in "bcdefghijklmnopqrstuvwxyz":
        if f"/dev/vd{letter}" not in used:
            return f"/dev/vd{letter}"
    raise ApiError(400, "No free disk device names for prefix 'vd'")


async def attach(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request, "volumeAttachment")
    volume_id = str(spec.get("volumeId") or "")
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        row = await servers.server(request, conn)
        if row["status"] not in ("ACTIVE", "SHUTOFF") or row["task"]:
            raise ApiError(409, f"Cannot 'attach_volume' instance {row['id']} while it is in vm_state "
                                f"{row['status'].lower()}")
        await state.settle("volumes", conn)  # a volume done creating is available now
        volume = await conn.fetchrow("SELECT * FROM simcloud.volumes WHERE id = $1 FOR UPDATE", volume_id)
        if volume is None:
            raise ApiError(404, f"Volume {volume_id} could not be found.")
        if volume["status"] != "available":
            raise ApiError(400, f"Invalid volume: volume {volume_id} status must be 'available'. "
                                f"Currently in '{volume['status']}'")
        used = [r["device"] for r in await conn.fetch(
            "SELECT device FROM simcloud.volume_attachments WHERE server_id = $1", row["id"])]
        device = spec.get("device") or _next_device([*used, "/dev/vda"])
        attached = await conn.fetchrow(
            "INSERT INTO simcloud.volume_attachments"
            " (id, server_id, volume_id, device, tag, delete_on_termination)"
            " VALUES ($1, $2, $3, $4, $5, $6) RETURNING *", state.new_id(), row["id"], volume_id, device,
            spec.get("tag"), bool(spec.get("delete_on_termination")))
        await conn.execute("UPDATE simcloud.volumes SET status = 'in-use', updated_at = now() WHERE id = $1",
                           volume_id)
    assert attached is not None
    return jsonweb.reply({"volumeAttachment": view(attached, request)})


async def detach(request: web.Request) -> web.Response:
    volume_id = request.match_info["volume_id"]
    async with request.app[STATE].pool.acquire() as conn, conn.transaction():
        row = await servers.server(request, conn)
        gone = await conn.fetchval("DELETE FROM simcloud.volume_attachments WHERE server_id = $1"
                                   " AND volume_id = $2 RETURNING id", row["id"], volume_id)
        if gone is None:
            raise ApiError(404, f"Volume {volume_id} is not attached to {row['id']}")
        await conn.execute(
            "UPDATE simcloud.volumes SET status = 'available', updated_at = now() WHERE id = $1", volume_id)
    return web.Response(status=202)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    one = f"{prefix}/servers/{{server_id}}/os-volume_attachments"
    router.add_get(one, list_attachments)
    router.add_post(one, attach)
    router.add_get(f"{one}/{{volume_id}}", show)
    router.add_delete(f"{one}/{{volume_id}}", detach)
