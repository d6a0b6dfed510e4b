"""Nova's flavors: the devstack set, create/delete (OS::Nova::Flavor), extra specs and tenant access."""

from __future__ import annotations

from typing import Any

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import auth, jsonweb, listing
from libs.simcloud.errors import ApiError
from libs.simcloud.microversion import microversion_of
from libs.simcloud.state import STATE

# devstack's flavors: (id, name, ram MB, vcpus, disk GB)
SEEDED = (("1", "m1.tiny", 512, 1, 1), ("2", "m1.small", 2048, 1, 20), ("3", "m1.medium", 4096, 2, 40),
          ("4", "m1.large", 8192, 4, 80), ("5", "m1.xlarge", 16384, 8, 160), ("42", "m1.nano", 128, 1, 1),
          ("84", "m1.micro", 192, 1, 1))


async def seed(conn: Conn) -> None:
    for flavor_id, name, ram, vcpus, disk in SEEDED:
        await conn.execute("INSERT INTO simcloud.flavors (id, name, ram, vcpus, disk)"
                           " VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
                           flavor_id, name, ram, vcpus, disk)


def _links(base: str, project_id: str, flavor_id: str) -> list[dict[str, str]]:
    return [{"rel": "self", "href": f"{base}/compute/v2.1/flavors/{flavor_id}"},
            {"rel": "bookmark", "href": f"{base}/compute/flavors/{flavor_id}"}]


def view(row: asyncpg.Record, request: web.Request, details: bool = True) -> dict[str, Any]:
    base = jsonweb.base_url(request)
    caller = auth.auth_of(request)
    result: dict[str, Any] = {"id": row["id"], "name": row["name"],
                              "links": _links(base, caller.project_id, row["id"])}
    version = microversion_of(request)
    if version >= (2, 55):
        result["description"] = row["description"]
    if not details:
        return result
    result.update({
        "ram": row["ram"], "vcpus": row["vcpus"], "disk": row["disk"],
        "swap": row["swap"] if (row["swap"] or version >= (2, 75)) else "",
        "OS-FLV-EXT-DATA:ephemeral": row["ephemeral"], "OS-FLV-DISABLED:disabled": False,
        "rxtx_factor": row["rxtx_factor"], "os-flavor-access:is_public": row["is_public"]})
    if version >= (2, 61):
        result["extra_specs"] = row["extra_specs"]
    return result


def embedded(row: asyncpg.Record) -> dict[str, Any]:
    """A flavor as a server shows it from 2.47 on."""
    return {"vcpus": row["vcpus"], "ram": row["ram"], "disk": row["disk"], "ephemeral": row["ephemeral"],
            "swap": row["swap"], "original_name": row["name"], "extra_specs": row["extra_specs"]}


async def lookup(conn: Conn, flavor_id: str) -> asyncpg.Record | None:
    return await conn.fetchrow("SELECT * FROM simcloud.flavors WHERE id = $1", flavor_id)


async def _flavor(conn: Conn, flavor_id: str) -> asyncpg.Record:
    row = await lookup(conn, flavor_id)
    if row is None:
        raise ApiError(404, f"Flavor {flavor_id} could not be found.")
    return row


def _admin(request: web.Request) -> None:
    if not auth.auth_of(request).is_admin:
        raise ApiError(403, "Policy doesn't allow os_compute_api:os-flavor-manage to be performed.")


async def _list(request: web.Request, details: bool) -> web.Response:
    caller = auth.auth_of(request)
    where = listing.Where()
    public = request.query.get("is_public", "true").lower()
    if public in ("none", "") and caller.is_admin:
        pass
    elif public == "false" and caller.is_admin:
        where.add("NOT is_public")
    else:
        where.add("(is_public OR id IN (SELECT flavor_id FROM simcloud.flavor_access WHERE project_id = {}))",
                  caller.project_id)
    if "minRam" in request.query:
        where.add("ram >= {}", int(request.query["minRam"]))
    if "minDisk" in request.query:
        where.add("disk >= {}", int(request.query["minDisk"]))
    pages = listing.paging(request)
    async with request.app[STATE].pool.acquire() as conn:
        rows = await listing.page(conn, "simcloud.flavors", where, pages)
    items = [view(r, request, details) for r in rows]
    return jsonweb.reply(listing.answer(request, "flavors", items, [r["id"] for r in rows], pages))


async def list_flavors(request: web.Request) -> web.Response:
    return await _list(request, details=False)


async def list_details(request: web.Request) -> web.Response:
    return await _list(request, details=True)


async def show(request: web.Request) -> web.Response:
    caller = auth.auth_of(request)
    async with request.app[STATE].pool.acquire() as conn:
        row = await _flavor(conn, request.match_info["flavor_id"])
        # A private flavor is not there for a member whose project was not given access (Nova: 404).
        if not (row["is_public"] or caller.is_admin or await conn.fetchval(
                "SELECT 1 FROM simcloud.flavor_access WHERE flavor_id = $1 AND project_id = $2",
                row["id"], caller.project_id)):
            raise ApiError(404, f"Flavor {row['id']} could not be found.")
    return jsonweb.reply({"flavor": view(row, request)})


async def create(request: web.Request) -> web.Response:
    _admin(request)
    spec = await jsonweb.body(request, "flavor")
    state = request.app[STATE]
    try:
        name = str(spec["name"])
        ram, vcpus, disk = int(spec["ram"]), int(spec["vcpus"]), int(spec.get("disk", 0))
        swap, ephemeral = int(spec.get("swap") or 0), int(spec.get("OS-FLV-EXT-DATA:ephemeral") or 0)
        rxtx = float(spec.get("rxtx_factor") or 1.0)
    except (KeyError, TypeError, ValueError) as exc:
        raise ApiError(400, f"Invalid input for field/attribute flavor: {exc}") from None
    if not name.strip() or ram < 1 or vcpus < 1 or disk < 0:
        raise ApiError(400, "Invalid input for field/attribute flavor.")
    flavor_id = str(spec.get("id") or state.new_id())
    async with state.pool.acquire() as conn:
        try:
            row = await conn.fetchrow(
                "INSERT INTO simcloud.flavors (id, name, ram, vcpus, disk, swap, ephemeral, rxtx_factor,"
                " is_public, description) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING *",
                flavor_id, name, ram, vcpus, disk, swap, ephemeral, rxtx,
                bool(spec.get("os-flavor-access:is_public", True)), spec.get("description"))
        except asyncpg.UniqueViolationError:
            raise ApiError(409, f"Flavor with name {name} already exists.") from None
    assert row is not None
    return jsonweb.reply({"flavor": view(row, request)})


async def delete(request: web.Request) -> web.Response:
    _admin(request)
    async with request.app[STATE].pool.acquire() as conn:
        done = await conn.fetchval("DELETE FROM simcloud.flavors WHERE id = $1 RETURNING id",
                                   request.match_info["flavor_id"])
    if done is None:
        raise ApiError(404, f"Flavor {request.match_info['flavor_id']} could not be found.")
    return web.Response(status=202)


async def get_specs(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await _flavor(conn, request.match_info["flavor_id"])
    key = request.match_info.get("key")
    if key is None:
        return jsonweb.reply({"extra_specs": row["extra_specs"]})
    if key not in row["extra_specs"]:
        raise ApiError(404, f"Flavor {row['id']} has no extra specs with key {key}.")
    return jsonweb.reply({key: row["extra_specs"][key]})


async def set_specs(request: web.Request) -> web.Response:
    _admin(request)
    key = request.match_info.get("key")
    body = await jsonweb.body(request)
    specs = body if key is not None else body.get("extra_specs")
    if not isinstance(specs, dict) or (key is not None and set(specs) != {key}):
        raise ApiError(400, "Invalid input for field/attribute extra_specs.")
    specs = {str(k): str(v) for k, v in specs.items()}
    async with request.app[STATE].pool.acquire() as conn:
        await _flavor(conn, request.match_info["flavor_id"])
        await conn.execute("UPDATE simcloud.flavors SET extra_specs = extra_specs || $2 WHERE id = $1",
                           request.match_info["flavor_id"], specs)
    return jsonweb.reply(specs if key is not None else {"extra_specs": specs})


async def delete_spec(request: web.Request) -> web.Response:
    _admin(request)
    key = request.match_info["key"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await _flavor(conn, request.match_info["flavor_id"])
        if key not in row["extra_specs"]:
            raise ApiError(404, f"Flavor {row['id']} has no extra specs with key {key}.")
        await conn.execute("UPDATE simcloud.flavors SET extra_specs = extra_specs - $2 WHERE id = $1",
                           row["id"], key)
    return web.Response(status=200)


async def access(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        await _flavor(conn, request.match_info["flavor_id"])
        rows = await conn.fetch("SELECT * FROM simcloud.flavor_access WHERE flavor_id = $1",
                                request.match_info["flavor_id"])
    return jsonweb.reply({"flavor_access": [{"flavor_id": r["flavor_id"], "tenant_id": r["project_id"]}
                                            for r in rows]})


async def action(request: web.Request) -> web.Response:
    _admin(request)
    body = await jsonweb.body(request)
    flavor_id = request.match_info["flavor_id"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await _flavor(conn, flavor_id)
        if row["is_public"]:
            raise ApiError(409, "Can not add access to a public flavor.")
        if "addTenantAccess" in body:
            await conn.execute("INSERT INTO simcloud.flavor_access VALUES ($1, $2) ON CONFLICT DO NOTHING",
                               flavor_id, str(body["addTenantAccess"]["tenant"]))
        elif "removeTenantAccess" in body:
            await conn.execute("DELETE FROM simcloud.flavor_access WHERE flavor_id = $1 AND project_id = $2",
                               flavor_id, str(body["removeTenantAccess"]["tenant"]))
        else:
            raise ApiError(400, f"Unknown flavor action: {sorted(body)}")
    return await access(request)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    router.add_get(f"{prefix}/flavors", list_flavors)
    router.add_get(f"{prefix}/flavors/detail", list_details)
    router.add_post(f"{prefix}/flavors", create)
    router.add_get(f"{prefix}/flavors/{{flavor_id}}", show)
    router.add_delete(f"{prefix}/flavors/{{flavor_id}}", delete)
    router.add_get(f"{prefix}/flavors/{{flavor_id}}/os-extra_specs", get_specs)
    router.add_post(f"{prefix}/flavors/{{flavor_id}}/os-extra_specs", set_specs)
    router.add_get(f"{prefix}/flavors/{{flavor_id}}/os-extra_specs/{{key}}", get_specs)
    router.add_put(f"{prefix}/flavors/{{flavor_id}}/os-extra_specs/{{key}}", set_specs)
    router.add_delete(f"{prefix}/flavors/{{flavor_id}}/os-extra_specs/{{key}}", delete_spec)
    router.add_get(f"{prefix}/flavors/{{flavor_id}}/os-flavor-access", access)
    router.add_post(f"{prefix}/flavors/{{flavor_id}}/action", action)
