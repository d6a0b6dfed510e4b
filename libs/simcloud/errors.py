"""Error answers in each OpenStack service's own JSON shape, raised as :class:`ApiError`.

Nova and Cinder: ``{"itemNotFound": {"code": 404, "message": ...}}``;
Neutron: ``{"NeutronError": {"type": ..., "message": ..., "detail": ""}}``;
Keystone: ``{"error": {"code": ..., "title": ..., "message": ...}}``;
Glance: ``{"code": ..., "title": ..., "message": ...}`` (its webob errors, as JSON).
openstacksdk reads the message out of each of these.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus

import asyncpg
from aiohttp import web
from aiohttp.typedefs import Middleware

from libs.simcloud import jsonweb
from libs.telemetry import logs

log = logs.logger("simcloud")


class ErrorStyle(enum.Enum):
    NOVA = "nova"  # Cinder answers the same way
    NEUTRON = "neutron"
    KEYSTONE = "keystone"
    GLANCE = "glance"


class ApiError(Exception):
    """An answer of status ``status``; ``kind`` is Neutron's error type (e.g. ``NetworkNotFound``)."""

    def __init__(self, status: int, message: str, kind: str | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.headers = headers or {}


def not_found(message: str, kind: str | None = None) -> ApiError:
    return ApiError(404, message, kind)


def bad_request(message: str, kind: str | None = None) -> ApiError:
    return ApiError(400, message, kind or "BadRequest")


def conflict(message: str, kind: str | None = None) -> ApiError:
    return ApiError(409, message, kind or "Conflict")


_NOVA_KEYS = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
              405: "badMethod", 409: "conflictingRequest", 413: "overLimit", 429: "overLimit",
              500: "computeFault", 501: "notImplemented", 503: "serviceUnavailable"}


def body(style: ErrorStyle, status: int, message: str, kind: str | None = None) -> dict[str, object]:
    """The JSON body a service of ``style`` answers an error with."""
    title = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    if style is ErrorStyle.NOVA:
        key = _NOVA_KEYS.get(status, "computeFault" if status >= 500 else "badRequest")
        return {key: {"code": status, "message": message}}
    if style is ErrorStyle.NEUTRON:
        return {"NeutronError": {"type": kind or title.replace(" ", ""), "message": message, "detail": ""}}
    if style is ErrorStyle.KEYSTONE:
        return {"error": {"code": status, "title": title, "message": message}}
    return {"code": status, "title": title, "message": message}


def response(style: ErrorStyle, status: int, message: str, kind: str | None = None,
             headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(status=status, body=json.dumps(body(style, status, message, kind)),
                        content_type="application/json", headers=headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(style: ErrorStyle) -> Middleware:
    """A sub-app middleware turning :class:`ApiError` and aiohttp's own 404/405 into ``style``'s bodies."""

    @web.middleware
    async def render(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return response(style, exc.status, exc.message, exc.kind, exc.headers)
        except jsonweb.BadBody as exc:
            return response(style, 400, str(exc), "BadRequest")
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return response(style, exc.status, exc.reason, None, {
                k: v for k, v in exc.headers.items() if k.lower() == "allow"})
        except (ValueError, TypeError, asyncpg.DataError) as exc:
            # A value the handler could not take (a bad address, a number that is not one).
            return response(style, 400, f"Invalid input: {exc}", "BadRequest")
        except Exception:
            log.exception("simcloud: %s %s failed", request.method, request.path)
            return response(style, 500, "An unexpected error occurred in the simulated cloud.")

    return render
