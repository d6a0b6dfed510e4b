"""Glance v2 (``/image``): images with their extra properties, upload, stage and import, tags; ``cirros``.

No bytes are kept: an upload is read, counted and hashed. A web-download import
is ``importing`` for ``import_seconds``, then ``active`` (settled on read).
"""

from __future__ import annotations

import datetime
import hashlib
import uuid
from typing import Any

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import auth, discovery, image_members, jsonweb, listing
from libs.simcloud.app import service_app
from libs.simcloud.errors import ApiError, ErrorStyle
from libs.simcloud.state import STATE, SimState

VERSION = discovery.ApiVersion("v2.16", "/image/v2")
IMPORT_METHODS = "glance-direct,web-download,copy-image"
CORE = ("id", "name", "status", "visibility", "protected", "os_hidden", "checksum", "os_hash_algo",
        "os_hash_value", "owner", "size", "virtual_size", "min_ram", "min_disk", "disk_format",
        "container_format", "created_at", "updated_at", "tags", "self", "file", "schema", "locations",
        "direct_url", "stores")
SETTABLE = ("name", "visibility", "protected", "os_hidden", "min_ram", "min_disk", "disk_format",
            "container_format", "tags")
DISK_FORMATS = ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")
CONTAINER_FORMATS = ("ami", "ari", "aki", "bare", "ovf", "ova", "docker", "compressed")
CIRROS = "cirros-0.6.3-x86_64-disk"


async def seed(conn: Conn, state: SimState) -> None:
    """The image devstack uploads, by its name and the short name ``cirros`` templates use."""
    if await conn.fetchval("SELECT 1 FROM simcloud.images WHERE name = 'cirros'"):
        return
    await conn.execute(
        "INSERT INTO simcloud.images (id, name, status, visibility, disk_format, container_format, size,"
        " virtual_size, checksum, os_hash_algo, os_hash_value, properties) VALUES ($1, 'cirros', 'active',"
        " 'public', 'qcow2', 'bare', 21430272, 117440512, 'c8fc807773e5354afe61636071771906', 'sha512',"
        " $2, $3)", str(uuid.uuid4()), hashlib.sha512(CIRROS.encode()).hexdigest(),
        {"hw_rng_model": "virtio", "os_distro": "cirros", "description": CIRROS})


def view(row: asyncpg.Record) -> dict[str, Any]:
    result: dict[str, Any] = dict(row["properties"])
    result.update({
        "id": row["id"], "name": row["name"], "status": row["status"], "visibility": row["visibility"],
        "protected": row["protected"], "os_hidden": row["os_hidden"], "checksum": row["checksum"],
        "os_hash_algo": row["os_hash_algo"], "os_hash_value": row["os_hash_value"], "owner": row["owner"],
        "size": row["size"], "virtual_size": row["virtual_size"], "min_ram": row["min_ram"],
        "min_disk": row["min_disk"], "disk_format": row["disk_format"],
        "container_format": row["container_format"],
        "created_at": row["created_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
        "updated_at": row["updated_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tags": list(row["tags"]), "self": f"/v2/images/{row['id']}", "file": f"/v2/images/{row['id']}/file",
        "schema": "/v2/schemas/image"})
    return result


async def _settle(conn: Conn, now: datetime.datetime) -> None:
    await conn.execute("UPDATE simcloud.images SET status = 'active', due_at = NULL, updated_at = due_at"
                       " WHERE status = 'importing' AND due_at <= $1", now)


# Who sees an image: everyone (public, community), its owner, and the projects it is shared with.
_VISIBLE = ("(visibility IN ('public', 'community') OR owner = {} OR (visibility = 'shared' AND id IN"
            " (SELECT image_id FROM simcloud.image_members WHERE member_id = {})))")


async def _image(request: web.Request, conn: Conn) -> asyncpg.Record:
    image_id = request.match_info["image_id"]
    await _settle(conn, request.app[STATE].now())
    caller = auth.auth_of(request)
    where = listing.Where().eq("id", image_id)
    if not caller.is_admin:
        where.add(_VISIBLE, caller.project_id, caller.project_id)
    row = await conn.fetchrow(f"SELECT * FROM simcloud.images {where.sql()}", *where.args)
    if row is None:
        raise ApiError(404, f"No image found with ID {image_id}")
    return row


def _own(request: web.Request, row: asyncpg.Record) -> None:
    caller = auth.auth_of(request)
    if not caller.is_admin and row["owner"] != caller.project_id:
        raise ApiError(403, "You are not permitted to modify this image.")


async def list_images(request: web.Request) -> web.Response:
    caller = auth.auth_of(request)
    q = request.query
    where = listing.Where()
    if not caller.is_admin:
        where.add(_VISIBLE, caller.project_id, caller.project_id)
    for column in ("name", "status", "visibility", "owner", "disk_format", "container_format"):
        where.eq(column, q.get(column))
    if tags := q.getall("tag", []):
        where.add("tags @> {}::text[]", list(tags))
    if "os_hidden" in q:
        where.eq("os_hidden", listing.flag(q["os_hidden"]))
    else:
        where.add("NOT os_hidden")
    known = {"name", "status", "visibility", "owner", "disk_format", "container_format", "tag", "os_hidden",
             "limit", "marker", "sort", "sort_key", "sort_dir", "member_status", "protected", "id"}
    where.eq("id", q.get("id"))
    for key, value in q.items():
        if key not in known:  # Glance filters on extra properties too
            where.add("properties ->> {} = {}", key, value)
    pages = listing.paging(request, max_limit=1000)
    async with request.app[STATE].pool.acquire() as conn:
        await _settle(conn, request.app[STATE].now())
        rows = await listing.page(conn, "simcloud.images", where, pages)
    body: dict[str, Any] = {"images": [view(r) for r in rows], "first": "/v2/images",
                            "schema": "/v2/schemas/images"}
    href = listing.next_href(request, [r["id"] for r in rows], pages)
    if href:
        body["next"] = href[href.index("/v2/"):]
    return jsonweb.reply(body)


async def show(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        return jsonweb.reply(view(await _image(request, conn)))


def _checked(spec: dict[str, Any]) -> dict[str, Any]:
    """The core fields of a create or patch, checked; 400 as Glance words it."""
    core = {k: spec[k] for k in SETTABLE if k in spec}
    if core.get("disk_format") not in (None, *DISK_FORMATS):
        raise ApiError(400, f"Invalid disk format '{core['disk_format']}' for image.")
    if core.get("container_format") not in (None, *CONTAINER_FORMATS):
        raise ApiError(400, f"Invalid container format '{core['container_format']}' for image.")
    if core.get("visibility") not in (None, "public", "private", "shared", "community"):
        raise ApiError(400, f"Invalid visibility value: {core['visibility']}")
    for key in ("min_ram", "min_disk"):
        if key in core and (not isinstance(core[key], int) or core[key] < 0):
            raise ApiError(400, f"Invalid value for {key}")
    if "tags" in core:
        core["tags"] = [str(t) for t in dict.fromkeys(core["tags"] or [])]
    return core


async def create(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request)
    state = request.app[STATE]
    caller = auth.auth_of(request)
    readonly = set(spec) & {"status", "checksum", "size", "virtual_size", "created_at", "updated_at",
                            "self", "file", "schema", "os_hash_algo", "os_hash_value"}
    if readonly:
        raise ApiError(403, f"Attribute '{sorted(readonly)[0]}' is read-only.")
    core = _checked(spec)
    extra = {k: v for k, v in spec.items() if k not in CORE}
    image_id = str(spec.get("id") or state.new_id())
    owner = spec.get("owner") or caller.project_id
    if owner != caller.project_id and not caller.is_admin:
        raise ApiError(403, "You are not permitted to create images owned by another project.")
    values = {"id": image_id, "owner": owner, "properties": extra, **core}
    columns = list(values)
    marks = ", ".join(f"${i + 1}" for i in range(len(columns)))
    async with state.pool.acquire() as conn:
        try:
            row = await conn.fetchrow(
                f"INSERT INTO simcloud.images ({', '.join(columns)}) VALUES ({marks}) RETURNING *",
                *values.values())
        except asyncpg.UniqueViolationError:
            raise ApiError(409, f"Image with identifier {image_id} already exists!") from None
    assert row is not None
    return jsonweb.reply(view(row), status=201, headers={"OpenStack-image-import-methods": IMPORT_METHODS})


async def update(request: web.Request) -> web.Response:
    """JSON-patch (Glance's media type): replace/add/remove on core fields and extra properties."""
    raw = await request.json()
    if not isinstance(raw, list):
        raise ApiError(400, "Request body must be a JSON array of operation objects.")
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
        _own(request, row)
        current = {k: row[k] for k in SETTABLE}
        extra = dict(row["properties"])
        for op in raw:
            path = str(op.get("path", "")).lstrip("/")
            name = path.split("/", 1)[0]
            if op.get("op") in ("replace", "add"):
                if name in SETTABLE:
                    current.update(_checked({name: op.get("value")}))
                elif name in CORE:
                    raise ApiError(403, f"Attribute '{name}' is read-only.")
                else:
                    extra[name] = op.get("value")
            elif op.get("op") == "remove":
                if name in CORE:
                    raise ApiError(403, f"Attribute '{name}' is reserved.")
                if extra.pop(name, None) is None:
                    raise ApiError(409, f"Property {name} does not exist.")
            else:
                raise ApiError(400, f"Invalid operation: {op.get('op')}")
        sets = ", ".join(f"{k} = ${i + 2}" for i, k in enumerate(current))
        updated = await conn.fetchrow(
            f"UPDATE simcloud.images SET {sets}, properties = ${len(current) + 2}, updated_at = now()"
            " WHERE id = $1 RETURNING *", row["id"], *current.values(), extra)
    assert updated is not None
    return jsonweb.reply(view(updated))


async def delete(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
        _own(request, row)
        if row["protected"]:
            raise ApiError(403, f"Image {row['id']} is protected and cannot be deleted.")
        await conn.execute("DELETE FROM simcloud.images WHERE id = $1", row["id"])
    return web.Response(status=204)


async def upload(request: web.Request) -> web.Response:
    """PUT file (or stage): the bytes are counted and hashed, not kept."""
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
        _own(request, row)
    if row["status"] not in ("queued", "uploading"):
        raise ApiError(409, f"Image status transition from {row['status']} to saving is not allowed")
    md5, sha512, size = hashlib.md5(usedforsecurity=False), hashlib.sha512(), 0
    async for chunk in request.content.iter_chunked(1 << 16):
        md5.update(chunk)
        sha512.update(chunk)
        size += len(chunk)
    staged = request.path.endswith("/stage")
    async with request.app[STATE].pool.acquire() as conn:
        await conn.execute(
            "UPDATE simcloud.images SET status = $2, size = $3, virtual_size = $3, checksum = $4,"
            " os_hash_algo = 'sha512', os_hash_value = $5, updated_at = now() WHERE id = $1",
            row["id"], "uploading" if staged else "active", size, md5.hexdigest(), sha512.hexdigest())
    return web.Response(status=204)


async def download(request: web.Request) -> web.Response:
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
    if row["status"] != "active":
        return web.Response(status=204)
    return web.Response(body=b"\0" * 0, content_type="application/octet-stream",
                        headers={"Content-MD5": row["checksum"] or ""})


async def import_image(request: web.Request) -> web.Response:
    spec = await jsonweb.body(request)
    method = (spec.get("method") or {}).get("name")
    state = request.app[STATE]
    async with state.pool.acquire() as conn:
        row = await _image(request, conn)
        _own(request, row)
        if method == "web-download":
            uri = (spec.get("method") or {}).get("uri")
            if not uri or not str(uri).startswith(("http://", "https://")):
                raise ApiError(400, "URI for web-download does not pass filtering: " + str(uri))
            if row["status"] != "queued":
                raise ApiError(409, f"Image {row['id']} is not in a valid state: {row['status']}")
        elif method == "glance-direct":
            if row["status"] != "uploading":
                raise ApiError(409, f"Image {row['id']} is not staged")
        else:
            raise ApiError(400, f"Import method {method} is not valid")
        due = state.now() + datetime.timedelta(seconds=state.settings.import_seconds)
        extra = dict(row["properties"]) | ({"os_glance_import_uri": spec["method"]["uri"]}
                                          if method == "web-download" else {})
        await conn.execute("UPDATE simcloud.images SET status = 'importing', due_at = $2, properties = $3,"
                           " size = coalesce(size, 13287936), updated_at = now() WHERE id = $1",
                           row["id"], due, extra)
    return web.Response(status=202)


async def tag(request: web.Request) -> web.Response:
    name = request.match_info["tag"]
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
        _own(request, row)
        tags = list(row["tags"])
        if request.method == "PUT":
            tags = tags if name in tags else [*tags, name]
        elif name not in tags:
            raise ApiError(404, f"Tag {name} not found.")
        else:
            tags.remove(name)
        await conn.execute("UPDATE simcloud.images SET tags = $2, updated_at = now() WHERE id = $1",
                           row["id"], tags)
    return web.Response(status=204)


async def activation(request: web.Request) -> web.Response:
    """``POST .../actions/deactivate`` and ``.../reactivate`` (an admin's)."""
    if not auth.auth_of(request).is_admin:
        raise ApiError(403, "You are not authorized to complete this action.")
    deactivate = request.match_info["action"] == "deactivate"
    async with request.app[STATE].pool.acquire() as conn:
        row = await _image(request, conn)
        if row["status"] not in ("active", "deactivated"):
            raise ApiError(403, f"Not allowed to {request.match_info['action']} an image in status "
                                f"{row['status']}")
        await conn.execute("UPDATE simcloud.images SET status = $2, updated_at = now() WHERE id = $1",
                           row["id"], "deactivated" if deactivate else "active")
    return web.Response(status=204)


async def import_info(request: web.Request) -> web.Response:
    return jsonweb.reply({"import-methods": {"description": "Import methods available.", "type": "array",
                                             "value": IMPORT_METHODS.split(",")}})


def make_app(state: SimState) -> web.Application:
    app = service_app(state, ErrorStyle.GLANCE)
    discovery.add_routes(app, "/image", VERSION)
    r = app.router
    r.add_get("/v2/images", list_images)
    r.add_post("/v2/images", create)
    r.add_get("/v2/images/{image_id}", show)
    r.add_patch("/v2/images/{image_id}", update)
    r.add_delete("/v2/images/{image_id}", delete)
    r.add_put("/v2/images/{image_id}/file", upload)
    r.add_put("/v2/images/{image_id}/stage", upload)
    r.add_get("/v2/images/{image_id}/file", download)
    r.add_post("/v2/images/{image_id}/import", import_image)
    r.add_put("/v2/images/{image_id}/tags/{tag}", tag)
    r.add_delete("/v2/images/{image_id}/tags/{tag}", tag)
    r.add_post("/v2/images/{image_id}/actions/{action:deactivate|reactivate}", activation)
    r.add_get("/v2/info/import", import_info)
    image_members.add_routes(r, _image)
    return app
