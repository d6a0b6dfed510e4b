"""What every Cinder call starts from: its transaction (transitions settled first), the caller, its views."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg
from aiohttp import web

from libs.db import Conn
from libs.simcloud import auth
from libs.simcloud.cinder import store, volumes
from libs.simcloud.cinder.volumes import Body
from libs.simcloud.errors import ApiError
from libs.simcloud.state import STATE, SimState

DEFAULT_TYPE = "__DEFAULT__"


@asynccontextmanager
async def conn(request: web.Request) -> AsyncIterator[tuple[Conn, SimState, auth.Auth]]:
    """One transaction, after the transitions due by now are settled."""
    state = request.app[STATE]
    caller = auth.auth_of(request)
    if request.match_info["project_id"] != caller.project_id and not caller.is_admin:
        raise ApiError(403, "Policy doesn't allow this operation to be performed.")
    async with state.pool.acquire() as connection:
        await store.settle(connection, state.clock())
        async with connection.transaction():
            yield connection, state, caller


def base(request: web.Request) -> str:
    return f"{request.scheme}://{request.host}/volume/v3/{request.match_info['project_id']}"


def scope(caller: auth.Auth, request: web.Request) -> str | None:
    wants_all = request.query.get("all_tenants", "").lower() in ("1", "true", "yes")
    return None if caller.is_admin and wants_all else caller.project_id


async def type_names(conn: Conn) -> dict[str, str]:
    return {r["id"]: r["name"] for r in await store.types(conn)}


async def views(conn: Conn, state: SimState, caller: auth.Auth, rows: list[asyncpg.Record],
                 base: str) -> list[Body]:
    attached = await store.attachments(conn, [r["id"] for r in rows])
    names = await type_names(conn)
    now = state.clock()
    return [volumes.view(r, attached.get(r["id"], []), names.get((r["data"] or {}).get("volume_type_id", ""),
                                                                 DEFAULT_TYPE),
                         now, base, admin=caller.is_admin) for r in rows]


async def one(conn: Conn, state: SimState, caller: auth.Auth, volume_id: str, base: str, *,
               lock: bool = False) -> tuple[asyncpg.Record, Body]:
    row = await store.volume(conn, volume_id, None if caller.is_admin else caller.project_id, lock=lock)
    if row is None:
        raise ApiError(404, f"Volume {volume_id} could not be found.")
    return row, (await views(conn, state, caller, [row], base))[0]


async def addressed(request: web.Request, conn: Conn, state: SimState, caller: auth.Auth, *,
                    lock: bool = False) -> tuple[asyncpg.Record, Body]:
    """The volume the request's path names."""
    return await one(conn, state, caller, request.match_info["id"], base(request), lock=lock)
