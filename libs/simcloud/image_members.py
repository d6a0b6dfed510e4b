"""Glance's image members: an image shared with another project (``visibility: shared``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp import web

from libs.simcloud import auth, jsonweb
from libs.simcloud.errors import ApiError
from libs.simcloud.state import STATE

STATUSES = ("pending", "accepted", "rejected")


def view(row: asyncpg.Record) -> dict[str, Any]:
    return {"image_id": row["image_id"], "member_id": row["member_id"], "status": row["status"],
            "created_at": row["created_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
            "updated_at": row["updated_at"].strftime("%Y-%m-%dT%H:%M:%SZ"), "schema": "/v2/schemas/member"}


ImageOf = Callable[[web.Request, Any], Awaitable[asyncpg.Record]]


def add_routes(router: web.UrlDispatcher, image_of: ImageOf) -> None:
    """``image_of(request, conn)``: the path's image if the caller may see it (Glance's 404 otherwise)."""

    async def owned(request: web.Request, conn: Any) -> asyncpg.Record:
        image = await image_of(request, conn)
        caller = auth.auth_of(request)
        if not caller.is_admin and image["owner"] != caller.project_id:
            raise ApiError(403, "You are not permitted to share this image.")
        if image["visibility"] != "shared":
            raise ApiError(403, f"Only shared images have members (image {image['id']} is "
                                f"{image['visibility']}).")
        return image

    async def list_members(request: web.Request) -> web.Response:
        async with request.app[STATE].pool.acquire() as conn:
            image = await image_of(request, conn)
            rows = await conn.fetch(
                "SELECT * FROM simcloud.image_members WHERE image_id = $1 ORDER BY created_at", image["id"])
        return jsonweb.reply({"members": [view(r) for r in rows], "schema": "/v2/schemas/members"})

    async def add(request: web.Request) -> web.Response:
        member = str((await jsonweb.body(request)).get("member") or "")
        if not member:
            raise ApiError(400, "Member to be added not specified")
        async with request.app[STATE].pool.acquire() as conn:
            image = await owned(request, conn)
            try:
                row = await conn.fetchrow("INSERT INTO simcloud.image_members (image_id, member_id)"
                                          " VALUES ($1, $2) RETURNING *", image["id"], member)
            except asyncpg.UniqueViolationError:
                raise ApiError(409, f"Member {member} already exists for image {image['id']}") from None
        assert row is not None
        return jsonweb.reply(view(row))

    async def one(request: web.Request) -> web.Response:
        member = request.match_info["member_id"]
        async with request.app[STATE].pool.acquire() as conn:
            image = await image_of(request, conn)
            if request.method == "DELETE":
                await owned(request, conn)
                row = await conn.fetchrow("DELETE FROM simcloud.image_members WHERE image_id = $1"
                                          " AND member_id = $2 RETURNING *", image["id"], member)
            elif request.method == "PUT":
                status = (await jsonweb.body(request)).get("status")
                if status not in STATUSES:
                    raise ApiError(400, f"Invalid status: {status}")
                row = await conn.fetchrow(
                    "UPDATE simcloud.image_members SET status = $3, updated_at = now()"
                    " WHERE image_id = $1 AND member_id = $2 RETURNING *", image["id"], member, status)
            else:
                row = await conn.fetchrow("SELECT * FROM simcloud.image_members WHERE image_id = $1"
                                          " AND member_id = $2", image["id"], member)
        if row is None:
            raise ApiError(404, f"{member} is not a member of image {image['id']}")
        return web.Response(status=204) if request.method == "DELETE" else jsonweb.reply(view(row))

    router.add_get("/v2/images/{image_id}/members", list_members)
    router.add_post("/v2/images/{image_id}/members", add)
    router.add_get("/v2/images/{image_id}/members/{member_id}", one)
    router.add_put("/v2/images/{image_id}/members/{member_id}", one)
    router.add_delete("/v2/images/{image_id}/members/{member_id}", one)
