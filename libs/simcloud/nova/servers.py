"""Nova's servers: create, list (filters, paging), show, update, delete; metadata, tags and addresses."""

from __future__ import annotations

import datetime
from typing import Any

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import auth, jsonweb, listing, netcore
from libs.simcloud.errors import ApiError
from libs.simcloud.microversion import microversion_of
from libs.simcloud.nova import boot, store, views
from libs.simcloud.nova.lifecycle import Task
from libs.simcloud.state import STATE


def context(request: web.Request) -> views.Context:
    return views.Context(jsonweb.base_url(request), microversion_of(request), auth.auth_of(request).is_admin)


async def server(request: web.Request, conn: Conn) -> asyncpg.Record:
    """The path's server, settled, if the caller may see it; Nova's 404 otherwise."""
    caller = auth.auth_of(request)
    server_id = request.match_info["server_id"]
    row = await store.get(conn, server_id, request.app[STATE].now())
    if row is None or (row["project_id"] != caller.project_id and not caller.is_admin):
        raise ApiError(404, f"Instance {server_id} could not be found.")
    return row


async def shown(request: web.Request, conn: Conn, row: asyncpg.Record) -> dict[str, Any]:
    return views.detail(row, await views.related(conn, [row]), context(request))


def _filters(request: web.Request) -> listing.Where:
    caller = auth.auth_of(request)
    q = request.query
    where = listing.Where()
    all_tenants = caller.is_admin and bool(listing.flag(q.get("all_tenants"))
                                           or listing.flag(q.get("all_projects")))
    project = q.get("project_id") or q.get("tenant_id")
    if caller.is_admin and project:
        where.eq("project_id", project)
    elif not all_tenants:
        where.eq("project_id", caller.project_id)
    if q.get("name"):
        where.add("name ~ {}", q["name"])
    if q.get("status"):
        where.eq("status", q["status"].upper())
    where.eq("flavor_id", q.get("flavor"))
    where.eq("image_id", q.get("image"))
    where.eq("key_name", q.get("key_name"))
    if q.get("changes-since"):
        try:
            since = datetime.datetime.fromisoformat(q["changes-since"].replace("Z", "+00:00"))
        except ValueError:
            raise ApiError(400, f"Invalid filter field: changes-since: {q['changes-since']}") from None
        where.add("updated_at >= {}", since)
    if q.get("ip"):
        where.add("id IN (SELECT device_id FROM simcloud.ports WHERE fixed_ips::text ~ {})", q["ip"])
    return where.tags(request)


async def _list(request: web.Request, details: bool) -> web.Response:
    pages = listing.paging(request)
    where = _filters(request)
    ctx = context(request)
    async with request.app[STATE].pool.acquire() as conn:
        try:
            rows = await store.page(conn, where, pages, request.app[STATE].now())
        except asyncpg.InvalidRegularExpressionError as exc:
            raise ApiError(400, f"Invalid filter: {exc}") from None
        if details:
            related = await views.related(conn, rows)
            items = [views.detail(r, related, ctx) for r in rows]
        else:
            items = [views.brief(r, ctx) for r in rows]
    return jsonweb.reply(listing.answer(request, "servers", items, [r["id"] for r in rows], pages))


async def list_servers(request: web.Request) -> web.Response:
    return await _list(request, details=False)


async def list_details(request: web.Request) -> web.Response:
    return await _list(request, details=True)


async def show(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        return jsonweb.reply({"server": await shown(request, conn, row)})


async def create(request: web.Request) -> web.Response:
    asked = boot.parse(await jsonweb.body(request))
    state = request.app[STATE]
    caller = auth.auth_of(request)
    async with state.pool.acquire() as conn:
        row = await boot.create(conn, state, asked, caller, state.now())
    ctx = context(request)
    body = {"id": row["id"], "links": views.links(ctx.base, "servers", row["id"]),
            "OS-DCF:diskConfig": row["data"].get("disk_config", "MANUAL"),
            "security_groups": [{"name": n} for n in row["data"]["security_groups"]],
            "adminPass": "simcloud-" + row["id"][:8]}
    return jsonweb.reply({"server": body}, status=202)


async def update(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request, "server")
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        changes: dict[str, Any] = {}
        if "name" in spec:
            if not isinstance(spec["name"], str) or not spec["name"].strip():
                raise ApiError(400, "Invalid input for field/attribute name.")
            changes["name"] = spec["name"]
        data = dict(row["data"])
        for key in ("accessIPv4", "accessIPv6", "description", "hostname"):
            if key in spec:
                data[key] = spec[key]
        changes["data"] = data
        updated = await store.update(conn, row["id"], changes)
        assert updated is not None
        return jsonweb.reply({"server": await shown(request, conn, updated)})


async def delete(request: web.Request) -> web.Response:
    state = request.app[STATE]
    async with state.pool.acquire() as conn:
        row = await server(request, conn)
        if row["data"].get("locked") and not auth.auth_of(request).is_admin:
            raise ApiError(409, f"Instance {row['id']} is locked")
        if state.settings.delete_seconds > 0:
            due = state.now() + datetime.timedelta(seconds=state.settings.delete_seconds)
            await store.start_task(conn, row["id"], Task.DELETE, None, due=due)
        else:
            await store.remove(conn, row["id"])
    return web.Response(status=204)


# -- metadata


def _meta_value(body: dict[str, Any], key: str) -> dict[str, str]:
    found = body.get(key)
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise ApiError(400, f"Invalid input for field/attribute {key}.")
    return {str(k): v for k, v in found.items()}


async def get_metadata(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
    key = request.match_info.get("key")
    if key is None:
        return jsonweb.reply({"metadata": row["metadata"]})
    if key not in row["metadata"]:
        raise ApiError(404, "Metadata item was not found")
    return jsonweb.reply({"meta": {key: row["metadata"][key]}})


async def set_metadata(request: web.Request) -> web.Response:
    """POST merges, PUT replaces the whole set; PUT on a key sets that one."""
    body = await jsonweb.body(request)
    key = request.match_info.get("key")
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        if key is not None:
            given = _meta_value(body, "meta")
            if set(given) != {key}:
                raise ApiError(400, "Request body and URI mismatch")
            metadata = {**row["metadata"], **given}
        else:
            given = _meta_value(body, "metadata")
            metadata = given if request.method == "PUT" else {**row["metadata"], **given}
        if len(metadata) > 128:
            raise ApiError(403, "Quota exceeded for metadata_items: Requested 1, but already used 128 of 128")
        await store.update(conn, row["id"], {"metadata": metadata})
    return jsonweb.reply({"meta": given} if key is not None else {"metadata": metadata})


async def delete_metadata(request: web.Request) -> web.Response:
    key = request.match_info["key"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        if key not in row["metadata"]:
            raise ApiError(404, "Metadata item was not found")
        metadata = {k: v for k, v in row["metadata"].items() if k != key}
        await store.update(conn, row["id"], {"metadata": metadata})
    return web.Response(status=204)


# -- tags


async def get_tags(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
    tag = request.match_info.get("tag")
    if tag is None:
        return jsonweb.reply({"tags": list(row["tags"])})
    if tag not in row["tags"]:
        raise ApiError(404, f"Tag {tag} could not be found.")
    return web.Response(status=204)


async def set_tags(request: web.Request) -> web.Response:
    tag = request.match_info.get("tag")
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        if tag is None:
            tags = (await jsonweb.body(request)).get("tags")
            if not isinstance(tags, list):
                raise ApiError(400, "Invalid input for field/attribute tags.")
        else:
            tags = list(row["tags"]) + ([tag] if tag not in row["tags"] else [])
        await store.update(conn, row["id"], {"tags": [str(t) for t in dict.fromkeys(tags)]})
    if tag is None:
        return jsonweb.reply({"tags": tags})
    return web.Response(status=201 if tag not in row["tags"] else 204)


async def delete_tags(request: web.Request) -> web.Response:
    tag = request.match_info.get("tag")
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        if tag is not None and tag not in row["tags"]:
            raise ApiError(404, f"Tag {tag} could not be found.")
        kept = [t for t in row["tags"] if tag is not None and t != tag]
        await store.update(conn, row["id"], {"tags": kept})
    return web.Response(status=204)


# -- addresses and interfaces


async def ips(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        found = await netcore.addresses(conn, [row["id"]])
    network = request.match_info.get("network")
    if network is None:
        return jsonweb.reply({"addresses": found[row["id"]]})
    if network not in found[row["id"]]:
        raise ApiError(404, "There are no instances with this network label.")
    return jsonweb.reply({network: found[row["id"]][network]})


def _interface(port: asyncpg.Record) -> dict[str, Any]:
    return {"port_state": port["status"], "fixed_ips": port["fixed_ips"], "port_id": port["id"],
            "net_id": port["network_id"], "mac_addr": port["mac_address"], "tag": None}


async def interfaces(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await server(request, conn)
        ports = await netcore.ports_for_servers(conn, [row["id"]])
    return jsonweb.reply({"interfaceAttachments": [_interface(p) for p in ports]})


async def attach_interface(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request, "interfaceAttachment")
    state = request.app[STATE]
    async with state.pool.acquire() as conn, conn.transaction():
        row = await server(request, conn)
        if spec.get("port_id"):
            port = await netcore.bind_port(conn, str(spec["port_id"]), row["id"])
        elif spec.get("net_id"):
            port = await netcore.create_port(
                conn, state.rng, port_id=state.new_id(), project_id=row["project_id"],
                network_id=str(spec["net_id"]), fixed_ips=spec.get("fixed_ips") or [], device_id=row["id"],
                device_owner=netcore.COMPUTE_OWNER, nova_owned=True)
        else:
            raise ApiError(400, "Invalid input for field/attribute interfaceAttachment.")
    return jsonweb.reply({"interfaceAttachment": _interface(port)})


async def detach_interface(request: web.Request) -> web.Response:
    port_id = request.match_info["port_id"]
    async with request.app[STATE].pool.acquire() as conn, conn.transaction():
        row = await server(request, conn)
        port = await conn.fetchrow("SELECT * FROM simcloud.ports WHERE id = $1 AND device_id = $2",
                                   port_id, row["id"])
        if port is None:
            raise ApiError(404, f"Port {port_id} is not attached")
        if port["nova_owned"]:
            await netcore.delete_ports(conn, [port_id])
        else:
            await conn.execute("UPDATE simcloud.ports SET device_id = '', device_owner = '', status = 'DOWN',"
                               " updated_at = now() WHERE id = $1", port_id)
    return web.Response(status=202)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    one = f"{prefix}/servers/{{server_id}}"
    router.add_get(f"{prefix}/servers", list_servers)
    router.add_get(f"{prefix}/servers/detail", list_details)
    router.add_post(f"{prefix}/servers", create)
    router.add_get(one, show)
    router.add_put(one, update)
    router.add_delete(one, delete)
    router.add_get(f"{one}/metadata", get_metadata)
    router.add_post(f"{one}/metadata", set_metadata)
    router.add_put(f"{one}/metadata", set_metadata)
    router.add_get(f"{one}/metadata/{{key}}", get_metadata)
    router.add_put(f"{one}/metadata/{{key}}", set_metadata)
    router.add_delete(f"{one}/metadata/{{key}}", delete_metadata)
    router.add_get(f"{one}/tags", get_tags)
    router.add_put(f"{one}/tags", set_tags)
    router.add_delete(f"{one}/tags", delete_tags)
    router.add_get(f"{one}/tags/{{tag}}", get_tags)
    router.add_put(f"{one}/tags/{{tag}}", set_tags)
    router.add_delete(f"{one}/tags/{{tag}}", delete_tags)
    router.add_get(f"{one}/ips", ips)
    router.add_get(f"{one}/ips/{{network}}", ips)
    router.add_get(f"{one}/os-interface", interfaces)
    router.add_post(f"{one}/os-interface", attach_interface)
    router.add_delete(f"{one}/os-interface/{{port_id}}", detach_interface)
