"""``POST /servers/{id}/action``: resize, confirm/revert, stop/start, reboot, rebuild, and small ones."""

from __future__ import annotations

import datetime
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import jsonweb
from libs.simcloud.errors import ApiError
from libs.simcloud.nova import flavors, servers, store
from libs.simcloud.nova.lifecycle import SHOWN, Task, refusal
from libs.simcloud.state import STATE, SimState

Action = Callable[[web.Request, Conn, asyncpg.Record, Any], Awaitable[web.Response]]


def _due(state: SimState) -> datetime.datetime:
    return state.now() + datetime.timedelta(seconds=state.settings.boot_seconds)


async def _begin(request: web.Request, conn: Conn, row: asyncpg.Record, task: Task,
                 extra: dict[str, Any] | None = None) -> asyncpg.Record:
    state = request.app[STATE]
    changed = await store.start_task(conn, row["id"], task, SHOWN[task], due=_due(state), extra=extra)
    assert changed is not None
    return changed


async def resize(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    flavor_id = str((spec or {}).get("flavorRef") or "").rstrip("/").rsplit("/", 1)[-1]
    if not flavor_id:
        raise ApiError(400, "Invalid input for field/attribute flavorRef.")
    if await flavors.lookup(conn, flavor_id) is None:
        raise ApiError(400, f"Flavor {flavor_id} could not be found.")
    if flavor_id == row["flavor_id"]:
        raise ApiError(400, "When resizing, instances must change flavor!")
    await _begin(request, conn, row, Task.RESIZE, {"old_flavor_id": row["flavor_id"], "flavor_id": flavor_id})
    return web.Response(status=202)


async def confirm_resize(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    await store.update(conn, row["id"], {"status": "ACTIVE", "old_flavor_id": None})
    return web.Response(status=204)


async def revert_resize(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    await _begin(request, conn, row, Task.REVERT, {"flavor_id": row["old_flavor_id"], "old_flavor_id": None})
    return web.Response(status=202)


def _plain(task: Task) -> Action:
    """An action that only starts ``task`` (stop, start, suspend, resume)."""

    async def begin(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
        await _begin(request, conn, row, task)
        return web.Response(status=202)

    return begin


async def force_delete(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    """No server is ever soft-deleted here: a forced delete is a delete, at once."""
    await store.remove(conn, row["id"])
    return web.Response(status=204)


async def reboot(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    kind = str((spec or {}).get("type", "SOFT")).upper()
    if kind not in ("SOFT", "HARD"):
        raise ApiError(400, "Invalid input for field/attribute type.")
    await _begin(request, conn, row, Task.HARD_REBOOT if kind == "HARD" else Task.REBOOT)
    return web.Response(status=202)


async def rebuild(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    if not isinstance(spec, dict) or not spec.get("imageRef"):
        raise ApiError(400, "Invalid input for field/attribute imageRef.")
    image_id = str(spec["imageRef"]).rstrip("/").rsplit("/", 1)[-1]
    status = await conn.fetchval("SELECT status FROM simcloud.images WHERE id = $1", image_id)
    if status != "active":
        raise ApiError(400, f"Image {image_id} could not be found." if status is None
                       else f"Image {image_id} is not active.")
    extra: dict[str, Any] = {"image_id": image_id}
    if "name" in spec:
        extra["name"] = str(spec["name"])
    if isinstance(spec.get("metadata"), dict):
        extra["metadata"] = spec["metadata"]
    if "key_name" in spec:
        extra["key_name"] = spec["key_name"]
    if "user_data" in spec:
        extra["data"] = {**row["data"], "user_data": spec["user_data"]}
    changed = await _begin(request, conn, row, Task.REBUILD, extra)
    body = await servers.shown(request, conn, changed)
    body["adminPass"] = spec.get("adminPass") or "simcloud-" + row["id"][:8]
    return jsonweb.reply({"server": body}, status=202)


async def console_output(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    lines = [f"simcloud: server {row['id']} ({row['name']})", f"status: {row['status']}", "login: cirros"]
    length = (spec or {}).get("length")
    if length is not None:
        lines = lines[-int(length):] if int(length) > 0 else []
    return jsonweb.reply({"output": "\n".join(lines) + "\n"})


async def _data_flag(request: web.Request, conn: Conn, row: asyncpg.Record,
                     changes: dict[str, Any]) -> web.Response:
    await store.update(conn, row["id"], {"data": {**row["data"], **changes}})
    return web.Response(status=202)


async def lock(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    return await _data_flag(request, conn, row, {"locked": True,
                                                 "locked_reason": (spec or {}).get("locked_reason")})


async def unlock(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    return await _data_flag(request, conn, row, {"locked": False, "locked_reason": None})


async def add_security_group(request: web.Request, conn: Conn, row: asyncpg.Record,
                             spec: Any) -> web.Response:
    groups = list(row["data"].get("security_groups", ["default"]))
    name = str((spec or {}).get("name"))
    added = groups + ([name] if name not in groups else [])
    return await _data_flag(request, conn, row, {"security_groups": added})


async def remove_security_group(request: web.Request, conn: Conn, row: asyncpg.Record,
                                spec: Any) -> web.Response:
    name = str((spec or {}).get("name"))
    groups = [g for g in row["data"].get("security_groups", ["default"]) if g != name]
    return await _data_flag(request, conn, row, {"security_groups": groups})


async def change_password(request: web.Request, conn: Conn, row: asyncpg.Record, spec: Any) -> web.Response:
    return web.Response(status=202)


ACTIONS: dict[str, Action] = {
    "resize": resize, "confirmResize": confirm_resize, "revertResize": revert_resize,
    "os-stop": _plain(Task.STOP), "os-start": _plain(Task.START), "suspend": _plain(Task.SUSPEND),
    "resume": _plain(Task.RESUME), "reboot": reboot, "rebuild": rebuild, "forceDelete": force_delete,
    "os-getConsoleOutput": console_output, "lock": lock, "unlock": unlock,
    "addSecurityGroup": add_security_group, "removeSecurityGroup": remove_security_group,
    "changePassword": change_password,
}
# Actions that run whatever the server is doing.
_ANYTIME = ("os-getConsoleOutput", "lock", "unlock", "addSecurityGroup", "removeSecurityGroup",
            "changePassword", "forceDelete")


async def act(request: web.Request) -> web.Response:
    body = await jsonweb.body(request)
    if len(body) != 1:
        raise ApiError(400, "There is either no or more than one action in the request body.")
    name, spec = next(iter(body.items()))
    action = ACTIONS.get(name)
    if action is None:
        raise ApiError(400, f"There is no such action: {name}")
    async with request.app[STATE].pool.acquire() as conn:
        row = await servers.server(request, conn)
        if name not in _ANYTIME:
            task = Task(row["task"]) if row["task"] else None
            refused = refusal(name, row["id"], row["status"], task)
            if refused is not None:
                raise ApiError(409, refused)
        return await action(request, conn, row, spec)


def add_routes(router: web.UrlDispatcher, prefix: str) -> None:
    router.add_post(f"{prefix}/servers/{{server_id}}/action", act)
