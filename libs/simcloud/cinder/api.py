"""Cinder v3's routes under ``/volume/v3/{project_id}``: volumes, actions, metadata, types, snapshots."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import discovery, errors, jsonweb, listing, microversion
from libs.simcloud.app import service_app
from libs.simcloud.cinder import context, snapshots, store, volumes
from libs.simcloud.cinder.volumes import Body, Transition, invalid_input, invalid_volume
from libs.simcloud.errors import ApiError
from libs.simcloud.state import STATE, SimState

VERSION = discovery.ApiVersion("v3.0", "/volume/v3", "3.71", "3.0")
SPAN = microversion.Range("volume", None, (3, 0), (3, 71))


async def list_volumes(request: web.Request) -> web.Response:
    detail = request.path.rstrip("/").endswith("/detail")
    pages = listing.paging(request)
    async with context.conn(request) as (conn, state, caller):
        where = listing.Where().eq("project_id", context.scope(caller, request))
        where.eq("name", request.query.get("name"))
        if request.query.get("metadata"):
            where.add("data->'metadata' @> {}::jsonb", volumes.metadata_filter(request.query["metadata"]))
        rows = await listing.page(conn, "simcloud.volumes", where, pages)
        found = await context.views(conn, state, caller, rows, context.base(request))
    wanted_status = request.query.get("status")
    if wanted_status:
        found = [v for v in found if v["status"] == wanted_status]
    items = found if detail else [{"id": v["id"], "name": v["name"], "links": v["links"]} for v in found]
    answer: Body = {"volumes": items}
    links = listing.links(request, [r["id"] for r in rows], pages)
    if links:
        answer["volumes_links"] = links
    return jsonweb.reply(answer)


async def show_volume(request: web.Request) -> web.Response:
    async with context.conn(request) as (conn, state, caller):
        _, body = await context.addressed(request, conn, state, caller)
    return jsonweb.reply({"volume": body})


async def _check_quota(conn: Conn, project_id: str, size: int) -> None:
    limits, used = await store.quotas(conn, project_id), await store.usage(conn, project_id)
    if 0 <= limits["volumes"] <= used["volumes"]:
        raise ApiError(413, f"VolumeLimitExceeded: Maximum number of volumes allowed ({limits['volumes']}) "
                       "exceeded for quota 'volumes'.")
    if 0 <= limits["gigabytes"] < used["gigabytes"] + size:
        raise ApiError(413, "VolumeSizeExceedsAvailableQuota: Requested volume or snapshot exceeds allowed "
                       f"gigabytes quota. Requested {size}G, quota is {limits['gigabytes']}G and "
                       f"{used['gigabytes']}G has been consumed.")


async def create_volume(request: web.Request) -> web.Response:
    wanted = await jsonweb.body(request, "volume")
    async with context.conn(request) as (conn, state, caller):
        data: dict[str, Any] = {"description": wanted.get("description") or wanted.get("display_description"),
                                "availability_zone": volumes.check_zone(wanted.get("availability_zone")),
                                "metadata": volumes.check_metadata(wanted.get("metadata")),
                                "multiattach": bool(wanted.get("multiattach")), "user_id": caller.user_id}
        size = wanted.get("size")
        if wanted.get("snapshot_id"):
            snap = await store.snapshot(conn, str(wanted["snapshot_id"]), caller.project_id)
            if snap is None:
                raise ApiError(404, f"Snapshot {wanted['snapshot_id']} could not be found.")
            data["snapshot_id"], size = snap["id"], size or snap["size"]
        if wanted.get("source_volid"):
            source = await store.volume(conn, str(wanted["source_volid"]), caller.project_id)
            if source is None:
                raise ApiError(404, f"Volume {wanted['source_volid']} could not be found.")
            data["source_volid"], size = source["id"], size or source["size"]
        if wanted.get("imageRef"):
            data["image_id"], data["bootable"] = str(wanted["imageRef"]), True
        size = volumes.check_size(size)
        type_name = wanted.get("volume_type") or context.DEFAULT_TYPE
        vtype = await store.find_type(conn, str(type_name))
        if vtype is None:
            raise ApiError(404, f"Volume type with name {type_name} could not be found.")
        data["volume_type_id"] = vtype["id"]
        await _check_quota(conn, caller.project_id, size)
        seconds = state.settings.volume_seconds
        status = "creating" if seconds > 0 else "available"
        if seconds > 0:
            data.update(Transition("creating", "available", seconds).data(state.clock()))
        volume_id = state.new_id()
        await store.insert_volume(conn, volume_id=volume_id, project_id=caller.project_id,
                                  name=str(wanted.get("name") or wanted.get("display_name") or ""),
                                  size=size, status=status, data=data)
        _, body = await context.one(conn, state, caller, volume_id, context.base(request))
    return jsonweb.reply({"volume": body}, status=202)


async def update_volume(request: web.Request) -> web.Response:
    wanted = await jsonweb.body(request, "volume")
    async with context.conn(request) as (conn, state, caller):
        row, _ = await context.addressed(request, conn, state, caller, lock=True)
        data = dict(row["data"] or {})
        name = row["name"]
        if "name" in wanted or "display_name" in wanted:
            name = str(wanted.get("name", wanted.get("display_name")) or "")
        if "description" in wanted or "display_description" in wanted:
            data["description"] = wanted.get("description", wanted.get("display_description"))
        if "metadata" in wanted:
            data["metadata"] = volumes.check_metadata(wanted["metadata"])
        await store.update_volume(conn, row["id"], name=name, size=row["size"], status=row["status"],
                                  data=data)
        _, body = await context.one(conn, state, caller, row["id"], context.base(request))
    return jsonweb.reply({"volume": body})


async def delete_volume(request: web.Request) -> web.Response:
    async with context.conn(request) as (conn, state, caller):
        row, body = await context.addressed(request, conn, state, caller, lock=True)
        if body["status"] not in volumes.DELETABLE or body["attachments"] or \
                await store.snapshots_of(conn, row["id"]):
            raise invalid_volume("Volume status must be available or error or error_restoring or "
                                 "error_extending or error_managing and must not be migrating, attached, "
                                 "belong to a group, have snapshots, awaiting a transfer, or be "
                                 "disassociated from snapshots after volume transfer.")
        data = dict(row["data"] or {})
        data.update(Transition("deleting", volumes.GONE, state.settings.volume_seconds).data(state.clock()))
        await store.update_volume(conn, row["id"], name=row["name"], size=row["size"], status="deleting",
                                  data=data)
    return web.Response(status=202)


async def volume_action(request: web.Request) -> web.Response:
    action = await jsonweb.body(request)
    if len(action) != 1:
        raise invalid_input("There should be exactly one action in the request body.")
    name, args = next(iter(action.items()))
    async with context.conn(request) as (conn, state, caller):
        row, body = await context.addressed(request, conn, state, caller, lock=True)
        data, size, status = dict(row["data"] or {}), row["size"], body["status"]
        seconds, now = state.settings.volume_seconds, state.clock()
        if name == "os-extend":
            new_size = (args or {}).get("new_size")
            if status not in ("available", "in-use"):
                raise invalid_volume(f"Volume {row['id']} status must be available or in-use, but current "
                                     f"status is: {status}.")
            new_size = volumes.check_size(new_size)
            if new_size <= size:
                raise invalid_input("New size for extend must be greater than current size. (current: "
                                    f"{size}, extended: {new_size}).")
            size, data = new_size, {**data, **Transition("extending", status, seconds).data(now)}
            status = "extending"
        elif name == "os-retype":
            vtype = await store.find_type(conn, str((args or {}).get("new_type")))
            if vtype is None:
                raise ApiError(404, f"Volume type with name {(args or {}).get('new_type')} could not be "
                                    "found.")
            if status not in ("available", "in-use"):
                raise invalid_volume(f"Volume {row['id']} status must be available or in-use.")
            data["volume_type_id"] = vtype["id"]
            data.update(Transition("retyping", status, seconds).data(now))
            status = "retyping"
        elif name == "os-set_bootable":
            data["bootable"] = str((args or {}).get("bootable")).lower() in ("true", "1", "yes")
        elif name == "os-reset_status" and caller.is_admin:
            status = str((args or {}).get("status") or status)
            data.pop("next_status", None)
        else:
            raise invalid_input(f"There is no such action: {name}")
        await store.update_volume(conn, row["id"], name=row["name"], size=size, status=status, data=data)
    return web.Response(status=202)


async def metadata(request: web.Request) -> web.Response:
    key = request.match_info.get("key")
    wanted = await jsonweb.body(request) if request.method in ("POST", "PUT") else {}
    async with context.conn(request) as (conn, state, caller):
        row, _ = await context.addressed(request, conn, state, caller, lock=True)
        data = dict(row["data"] or {})
        current = dict(data.get("metadata") or {})
        if key is not None and request.method == "GET":
            if key not in current:
                raise ApiError(404, "Metadata item was not found")
            return jsonweb.reply({"meta": {key: current[key]}})
        if request.method == "GET":
            return jsonweb.reply({"metadata": current})
        if key is not None and request.method == "DELETE":
            if key not in current:
                raise ApiError(404, "Metadata item was not found")
            current.pop(key)
        elif key is not None:
            current.update(volumes.check_metadata(wanted.get("meta")))
        elif request.method == "PUT":
            current = volumes.check_metadata(wanted.get("metadata"))
        else:
            current.update(volumes.check_metadata(wanted.get("metadata")))
        data["metadata"] = current
        await store.update_volume(conn, row["id"], name=row["name"], size=row["size"], status=row["status"],
                                  data=data)
    if request.method == "DELETE":
        return web.Response(status=200)
    return jsonweb.reply({"meta": {key: current[key]}} if key is not None else {"metadata": current})


def _type_view(row: asyncpg.Record) -> Body:
    return {"id": row["id"], "name": row["name"], "description": row["description"],
            "is_public": row["is_public"], "extra_specs": dict(row["extra_specs"] or {}),
            "os-volume-type-access:is_public": row["is_public"], "qos_specs_id": None}


async def list_types(request: web.Request) -> web.Response:
    async with context.conn(request) as (conn, _, _caller):
        rows = await store.types(conn)
    return jsonweb.reply({"volume_types": [_type_view(r) for r in rows]})


async def show_type(request: web.Request) -> web.Response:
    wanted = request.match_info["type_id"]
    async with context.conn(request) as (conn, _, _caller):
        row = await store.find_type(conn, context.DEFAULT_TYPE if wanted == "default" else wanted)
    if row is None or (wanted != "default" and row["id"] != wanted):
        raise ApiError(404, f"Volume type {wanted} could not be found.")
    return jsonweb.reply({"volume_type": _type_view(row)})


async def limits(request: web.Request) -> web.Response:
    async with context.conn(request) as (conn, _, caller):
        quota, used = await store.quotas(conn, caller.project_id), await store.usage(conn, caller.project_id)
    return jsonweb.reply({"limits": {"rate": [], "absolute": {
        "maxTotalVolumes": quota["volumes"], "maxTotalSnapshots": quota["snapshots"],
        "maxTotalVolumeGigabytes": quota["gigabytes"], "maxTotalBackups": quota["backups"],
        "maxTotalBackupGigabytes": quota["backup_gigabytes"], "totalVolumesUsed": used["volumes"],
        "totalGigabytesUsed": used["gigabytes"], "totalSnapshotsUsed": used["snapshots"],
        "totalBackupsUsed": 0, "totalBackupGigabytesUsed": 0}}})


async def quota_set(request: web.Request) -> web.Response:
    project_id = request.match_info["target"]
    async with context.conn(request) as (conn, _, caller):
        if project_id != caller.project_id and not caller.is_admin:
            raise ApiError(403, "Policy doesn't allow this operation to be performed.")
        if request.method == "PUT":
            wanted = await jsonweb.body(request, "quota_set")
            unknown = sorted(set(wanted) - set(store.DEFAULT_QUOTAS) - {"tenant_id"})
            if unknown:
                raise ApiError(400, f"Bad key(s) in quota set: {', '.join(unknown)}")
            await store.set_quotas(conn, project_id,
                                   {k: int(v) for k, v in wanted.items() if k != "tenant_id"})
        quota, used = await store.quotas(conn, project_id), await store.usage(conn, project_id)
    if request.query.get("usage", "").lower() in ("true", "1"):
        return jsonweb.reply({"quota_set": {"id": project_id, **{
            k: {"limit": v, "in_use": used.get(k, 0), "reserved": 0, "allocated": 0}
            for k, v in quota.items()}}})
    return jsonweb.reply({"quota_set": {"id": project_id, **quota}})


async def zones(request: web.Request) -> web.Response:
    return jsonweb.reply({"availabilityZoneInfo": [{"zoneName": volumes.ZONE,
                                                    "zoneState": {"available": True}}]})


async def versioned_root(request: web.Request) -> web.Response:
    return jsonweb.reply({"version": discovery.document(jsonweb.base_url(request), VERSION)})


async def _settle_often(app: web.Application) -> AsyncIterator[None]:
    """Transitions also settle without a Cinder call, so Nova reads a volume's status as it is now."""
    state = app[STATE]

    async def loop() -> None:
        while True:
            await asyncio.sleep(0.2)
            with contextlib.suppress(asyncpg.PostgresError, OSError):
                async with state.pool.acquire() as conn:
                    await store.settle(conn, state.clock())

    task = asyncio.create_task(loop())
    yield
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def make_app(state: SimState) -> web.Application:
    app = service_app(state, errors.ErrorStyle.NOVA)
    app.middlewares.append(microversion.middleware(SPAN))
    discovery.add_routes(app, "/volume", VERSION)
    app.cleanup_ctx.append(_settle_often)
    # Nova reads a volume's status (attach) through the same lazy transitions.
    state.settlers["volumes"] = store.settle
    r = app.router
    p = "/v3/{project_id}"
    r.add_get(p, versioned_root)
    r.add_get(p + "/", versioned_root)
    r.add_get(p + "/volumes", list_volumes)
    r.add_get(p + "/volumes/detail", list_volumes)
    r.add_post(p + "/volumes", create_volume)
    r.add_get(p + "/volumes/{id}", show_volume)
    r.add_put(p + "/volumes/{id}", update_volume)
    r.add_delete(p + "/volumes/{id}", delete_volume)
    r.add_post(p + "/volumes/{id}/action", volume_action)
    r.add_route("*", p + "/volumes/{id}/metadata", metadata)
    r.add_route("*", p + "/volumes/{id}/metadata/{key}", metadata)
    r.add_get(p + "/types", list_types)
    r.add_get(p + "/types/{type_id}", show_type)
    r.add_get(p + "/snapshots", snapshots.list_snapshots)
    r.add_get(p + "/snapshots/detail", snapshots.list_snapshots)
    r.add_post(p + "/snapshots", snapshots.create_snapshot)
    r.add_route("GET", p + "/snapshots/{id}", snapshots.snapshot_one)
    r.add_route("DELETE", p + "/snapshots/{id}", snapshots.snapshot_one)
    r.add_get(p + "/limits", limits)
    r.add_route("GET", p + "/os-quota-sets/{target}", quota_set)
    r.add_route("PUT", p + "/os-quota-sets/{target}", quota_set)
    r.add_get(p + "/os-availability-zone", zones)
    return app
