"""JSON in and out of the simulator's handlers (orjson), and the query helpers every service uses."""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web


class BadBody(ValueError):
    """The request's body is not the JSON object the call needs."""


def reply(payload: object, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(payload), content_type="application/json",
                        headers=headers)


def no_content(headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=204, headers=headers)


async def body(request: web.Request, key: str | None = None) -> dict[str, Any]:
    """The request's JSON object (or the object under ``key`` in it)."""
    raw = await request.read()
    try:
        data = orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError as exc:
        raise BadBody(f"Malformed request body: {exc}") from None
    if not isinstance(data, dict):
        raise BadBody("The request body must be a JSON object")
    if key is None:
        return data
    inner = data.get(key)
    if not isinstance(inner, dict):
        raise BadBody(f"Missing or malformed '{key}' in request body")
    return inner


def base_url(request: web.Request) -> str:
    """The scheme and host the caller reached us on: links and the catalog are built on it."""
    return f"{request.scheme}://{request.host}"
