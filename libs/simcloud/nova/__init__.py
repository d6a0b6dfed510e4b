"""Nova (compute v2.1, microversions up to 2.96), mounted at ``/compute``: servers and their actions,
flavors, keypairs, server groups, volume attachments and interfaces.

A server boots lazily: it is BUILD until ``boot_seconds`` after its create,
then the first read settles it ACTIVE, or ERROR with a fault for the
``error_share`` chosen at create (store.settle). Its ``addresses`` are its
Neutron ports (netcore).
"""

from __future__ import annotations

from aiohttp import web

from libs.db import Conn
from libs.simcloud import discovery, microversion
from libs.simcloud.app import service_app
from libs.simcloud.errors import ErrorStyle
from libs.simcloud.nova import actions, flavors, keypairs, server_groups, servers, store, volume_attachments
from libs.simcloud.state import SimState

PREFIX = "/v2.1"
RANGE = microversion.Range("compute", "X-OpenStack-Nova-API-Version", (2, 1), (2, 96))
VERSION = discovery.ApiVersion("v2.1", "/compute/v2.1", "2.96", "2.1")


async def seed(conn: Conn, state: SimState) -> None:
    await flavors.seed(conn)


async def chaos_delete(state: SimState, server_id: str) -> bool:
    """The server vanishes, as if deleted behind Ember's back."""
    async with state.pool.acquire() as conn:
        if await conn.fetchval("SELECT 1 FROM simcloud.servers WHERE id = $1", server_id) is None:
            return False
        await store.remove(conn, server_id)
    return True


async def chaos_error(state: SimState, server_id: str) -> bool:
    """The server goes to ERROR with a fault, whatever it was doing."""
    async with state.pool.acquire() as conn:
        found = await store.update(conn, server_id, {
            "status": "ERROR", "task": None, "due_at": None,
            "fault": {"code": 500, "message": "Simulated failure (chaos)", "created": state.now().strftime(
                "%Y-%m-%dT%H:%M:%SZ")}})
    return found is not None


async def chaos_stop(state: SimState, server_id: str) -> bool:
    """The server is found SHUTOFF (its guest powered itself off)."""
    async with state.pool.acquire() as conn:
        found = await store.update(conn, server_id, {"status": "SHUTOFF", "task": None, "due_at": None})
    return found is not None


CHAOS_ACTS = {"servers/delete": chaos_delete, "servers/error": chaos_error, "servers/stop": chaos_stop}


def make_app(state: SimState) -> web.Application:
    app = service_app(state, ErrorStyle.NOVA)
    app.middlewares.append(microversion.middleware(RANGE))
    discovery.add_routes(app, "/compute", VERSION)
    for module in (servers, actions, flavors, keypairs, server_groups, volume_attachments):
        module.add_routes(app.router, PREFIX)
    return app
