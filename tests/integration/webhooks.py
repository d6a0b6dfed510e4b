"""A webhook endpoint for the notifier's deliveries: records what it gets, can refuse the first few."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer


class Receiver:
    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.refuse = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if self.refuse > 0:
            self.refuse -= 1
            return web.Response(status=503, text="not now")
        self.got.append((dict(request.headers), body))
        return web.Response(status=204)

    def bodies(self) -> list[dict[str, Any]]:
        return [orjson.loads(b) for _, b in self.got]

    def received(self) -> list[tuple[dict[str, str], dict[str, Any]]]:
        """Each delivery's headers and parsed body, in the order they came."""
        return [(headers, orjson.loads(b)) for headers, b in self.got]


@contextlib.asynccontextmanager
async def receiving() -> AsyncIterator[tuple[Receiver, str]]:
    """A running :class:`Receiver` and its URL."""
    got = Receiver()
    app = web.Application()
    app.router.add_post("/hook", got.handle)
    server = TestServer(app)
    await server.start_server()
    try:
        yield got, str(server.make_url("/hook"))
    finally:
        await server.close()
