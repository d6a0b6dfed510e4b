"""Cinder's snapshots, minimal: made from a volume, shown, listed, deleted (both after ``volume_seconds``)."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from libs.simcloud import jsonweb, listing
from libs.simcloud.cinder import context, store, volumes
from libs.simcloud.cinder.volumes import Body, Transition, invalid_volume
from libs.simcloud.errors import ApiError


def _snapshot_view(row: asyncpg.Record, now: float) -> Body:
    data = dict(row["data"] or {})
    return {"id": row["id"], "name": row["name"] or None, "description": data.get("description"),
            "volume_id": row["volume_id"], "size": row["size"],
            "status": volumes.settled(row["status"], data, now), "metadata": dict(data.get("metadata") or {}),
            "created_at": volumes.cinder_time(row["created_at"]),
            "updated_at": volumes.cinder_time(row["updated_at"]), "user_id": data.get("user_id"),
            "consumes_quota": True, "group_snapshot_id": None, "progress": "100%",
            "os-extended-snapshot-attributes:project_id": row["project_id"]}


async def list_snapshots(request: web.Request) -> web.Response:
    pages = listing.paging(request)
    async with context.conn(request) as (conn, state, caller):
        where = listing.Where().eq("project_id", context.scope(caller, request))
        where.eq("volume_id", request.query.get("volume_id")).eq("name", request.query.get("name"))
        rows = await listing.page(conn, "simcloud.volume_snapshots", where, pages)
    answer: Body = {"snapshots": [_snapshot_view(r, state.clock()) for r in rows]}
    if links := listing.links(request, [r["id"] for r in rows], pages):
        answer["snapshots_links"] = links
    return jsonweb.reply(answer)


async def snapshot_one(request: web.Request) -> web.Response:
    async with context.conn(request) as (conn, state, caller):
        scope = None if caller.is_admin else caller.project_id
        row = await store.snapshot(conn, request.match_info["id"], scope)
        if row is None:
            raise ApiError(404, f"Snapshot {request.match_info['id']} could not be found.")
        if request.method == "GET":
            return jsonweb.reply({"snapshot": _snapshot_view(row, state.clock())})
        data = {**dict(row["data"] or {}),
                **Transition("deleting", volumes.GONE, state.settings.volume_seconds).data(state.clock())}
        await conn.execute("UPDATE simcloud.volume_snapshots SET status = 'deleting', data = $2"
                           " WHERE id = $1",
                           row["id"], data)
    return web.Response(status=202)


async def create_snapshot(request: web.Request) -> web.Response:
    wanted = await jsonweb.body(request, "snapshot")
    async with context.conn(request) as (conn, state, caller):
        volume_id = str(wanted.get("volume_id") or "")
        _, body = await context.one(conn, state, caller, volume_id, context.base(request))
        if body["status"] not in ("available", "in-use") or (body["status"] == "in-use" and not wanted.get(
                "force")):
            raise invalid_volume("Volume status must be available to create a snapshot "
                                 "(or in-use with force).")
        limits, used = await store.quotas(conn, caller.project_id), await store.usage(conn, caller.project_id)
        if 0 <= limits["snapshots"] <= used["snapshots"]:
            raise ApiError(413, f"SnapshotLimitExceeded: Maximum number of snapshots allowed "
                                f"({limits['snapshots']}) exceeded")
        seconds = state.settings.volume_seconds
        data: dict[str, Any] = {"description": wanted.get("description"), "user_id": caller.user_id,
                                "metadata": volumes.check_metadata(wanted.get("metadata"))}
        if seconds > 0:
            data.update(Transition("creating", "available", seconds).data(state.clock()))
        row = await conn.fetchrow(
            "INSERT INTO simcloud.volume_snapshots (id, project_id, volume_id, name, size, status, data)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING *", state.new_id(), caller.project_id, volume_id,
            str(wanted.get("name") or ""), body["size"], "creating" if seconds > 0 else "available", data)
        assert row is not None
    return jsonweb.reply({"snapshot": _snapshot_view(row, state.clock())}, status=202)
