"""The api in this test process (aiohttp's test client) over an engine: fixtures' parts and polls."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.runtime import Runtime
from services.api.app import make_app
from tests.integration.engine_support import engine
from tests.support import eventually

Client = TestClient[web.Request, web.Application]
MakeClient = Callable[[web.Application], Awaitable[Client]]


@contextlib.asynccontextmanager
async def pausing_engine(settings: Settings, aiohttp_client: MakeClient
                         ) -> AsyncIterator[tuple[Client, Runtime]]:
    """An engine for hooks and breakpoints, and the api's client: few worker slots (a paused node
    must not hold one) and a quick hook sweep."""
    small = dataclasses.replace(settings, worker_concurrency=2, hook_sweep_seconds=0.2)
    async with engine(small) as rt:
        yield await aiohttp_client(make_app(small)), rt


async def stack_of(api: Client, path: str) -> dict[str, Any]:
    """``GET`` a stack's canonical path: the ``stack`` object."""
    async with api.get(path) as r:
        body: dict[str, Any] = (await r.json())["stack"]
        return body


async def settled(api: Client, path: str, status: str, timeout: float = 30) -> dict[str, Any]:
    """The stack once its ``stack_status`` is ``status``."""
    async def probe() -> dict[str, Any] | None:
        stack = await stack_of(api, path)
        return stack if stack["stack_status"] == status else None
    return await eventually(probe, timeout=timeout, interval=0.05, what=f"{path} to reach {status}")


def heat_fault(status: int, error_type: str, message: str) -> bytes:
    """Heat's fault body, byte for byte as its API writes it, for a 400 or a 404."""
    title, explanation = {
        400: ("Bad Request", "The server could not comply with the request since it is either malformed"
                             " or otherwise incorrect."),
        404: ("Not Found", "The resource could not be found."),
    }[status]
    return orjson.dumps({"code": status, "title": title, "explanation": explanation,
                         "error": {"type": error_type, "message": message, "traceback": None}})
