"""Nova's server groups: a policy (affinity, anti-affinity...) and the servers booted into it."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from libs.simcloud import auth, jsonweb, listing
from libs.simcloud.errors import ApiError
from libs.simcloud.microversion import microversion_of
from libs.simcloud.state import STATE

POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")


def view(row: asyncpg.Record, request: web.Request) -> dict[str, Any]:
    result: dict[str, Any] = {"id": row["id"], "name": row["name"], "members": list(row["members"])}
    if microversion_of(request) >= (2, 64):
        result.update({"policy": row["policy"], "rules": row["rules"]})
    else:
        result.update({"policies": [row["policy"]], "metadata": {}})
    if microversion_of(request) >= (2, 13):
        result.update({"project_id": row["project_id"], "user_id": row["user_id"]})
    return result


async def list_groups(request: web.Request) -> web.Response:
    caller = auth.auth_of(request)
    where = listing.Where()
    if not (caller.is_admin and listing.flag(request.query.get("all_projects"))):
        where.eq("project_id", caller.project_id)
    pages = listing.paging(request)
    async with request.app[STATE].pool.acquire() as conn:
        rows = await listing.page(conn, "simcloud.server_groups", where, pages)
    return jsonweb.reply({"server_groups": [view(r, request) for r in rows]})


async def _group(request: web.Request) -> asyncpg.Record:
    caller = auth.auth_of(request)
    group_id = request.match_info["group_id"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await conn.fetchrow("SELECT * FROM simcloud.server_groups WHERE id = $1", group_id)
    if row is None or (row["project_id"] != caller.project_id and not caller.is_admin):
        raise ApiError(404, f"Instance group {group_id} could not be found.")
    return row


async def show(request: web.Request) -> web.Response:
    return jsonweb.reply({"server_group": view(await _group(request), request)})


async def create(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request, "server_group")
    caller = auth.auth_of(request)
    state = request.app[STATE]
    if microversion_of(request) >= (2, 64):
        policy = spec.get("policy")
        rules = spec.get("rules") or {}
    else:
        policies = spec.get("policies") or []
        policy = policies[0] if isinstance(policies, list) and len(policies) == 1 else None
        rules = {}
    name = spec.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ApiError(400, "Invalid input for field/attribute name.")
    if policy not in POLICIES:
        raise ApiError(400, f"Invalid input for field/attribute policy. Value: {policy}.")
    async with state.pool.acquire() as conn:
        row = await conn.fetchrow(
            "INSERT INTO simcloud.server_groups (id, project_id, user_id, name, policy, rules)"
            " VALUES ($1, $2, $3, $4, $5, $6) RETURNING *",
            state.new_id(), caller.project_id, caller.user_id, name, policy, rules)
    assert row is not None
    return jsonweb.reply({"server_group": view(row, request)})


async def delete(request: web.Request) -> web.Response:
    row = await _group(request)
    async with request.app[STATE].pool.acquire() as conn:
        await conn.execute("DELETE FROM simcloud.server_groups WHERE id = $1", row["id"])
    return web.Response(status=204)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    router.add_get(f"{prefix}/os-server-groups", list_groups)
    router.add_post(f"{prefix}/os-server-groups", create)
    router.add_get(f"{prefix}/os-server-groups/{{group_id}}", show)
    router.add_delete(f"{prefix}/os-server-groups/{{group_id}}", delete)
