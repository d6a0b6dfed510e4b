"""Errors in Heat's fault body shape, for every failure the api answers.

``{"code": 404, "title": "Not Found", "explanation": "...",
"error": {"type": "EntityNotFound", "message": "...", "traceback": null}}``
is what python-heatclient parses to print ``error.message``.

Domain errors carry Heat's type name and message but no HTTP status:
:data:`STATUSES` is the one place that gives each its status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from types import MappingProxyType

import orjson
from aiohttp import web

from libs import dependencies
from libs.operations import StackExists
from libs.stack_snapshots import ActionInProgress
from libs.telemetry import logs
from libs.template.errors import EntityNotFound, NotFound, TemplateError
from services.api.policy import Forbidden

log = logs.logger("api")
# Seconds a client is asked to wait while PostgreSQL or NATS is down: a restart takes about that.
RETRY_AFTER_SECONDS = 2

_EXPLANATIONS = {
    400: "The server could not comply with the request since it is either malformed or otherwise incorrect.",
    401: "This server could not verify that you are authorized to access the document you requested.",
    403: "Access was denied to this resource.",
    404: "The resource could not be found.",
    405: "The method specified is not allowed for this resource.",
    409: "There was a conflict when trying to complete your request.",
    413: "The request entity is too large.",
    500: "The server has either erred or is incapable of performing the requested operation.",
    503: "The service is unavailable.",
}


# Heat's status for each domain error that is not a 400 (a subclass answers as its base does).
STATUSES: Mapping[type[TemplateError], int] = MappingProxyType({
    Forbidden: 403,
    NotFound: 404,
    EntityNotFound: 404,
    StackExists: 409,
    ActionInProgress: 409,
})
DEFAULT_STATUS = 400  # what a template, parameter or request says wrong is the client's error


def status_of(error: TemplateError) -> int:
    """The HTTP status Heat answers ``error`` with."""
    for kind in type(error).__mro__:
        if kind in STATUSES:
            return STATUSES[kind]
    return DEFAULT_STATUS


def answer(error: TemplateError, headers: dict[str, str] | None = None) -> web.Response:
    """Heat's fault response for a domain error: its status, its type and its message."""
    return fault(status_of(error), error.error_type, str(error), headers)


def fault(status: int, error_type: str, message: str,
          headers: dict[str, str] | None = None) -> web.Response:
    body = {
        "code": status,
        "title": HTTPStatus(status).phrase,
        "explanation": _EXPLANATIONS.get(status, HTTPStatus(status).description),
        "error": {"type": error_type, "message": message, "traceback": None},
    }
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json",
                        headers=headers)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def fault_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods | {"OPTIONS"}))
        if request.method == "OPTIONS":
            # Heat answers OPTIONS on every route with the methods it takes.
            return web.Response(status=204, headers={"Allow": allowed})
        return fault(405, "HTTPMethodNotAllowed",
                     f"The method {request.method} is not allowed for this resource.",
                     headers={"Allow": ", ".join(sorted(exc.allowed_methods))})
    except web.HTTPNotFound:
        return fault(404, "HTTPNotFound", f"The resource could not be found: {request.path}")
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return fault(exc.status, type(exc).__name__, exc.text or exc.reason)
    except TemplateError as exc:
        # Every error Ember raises on purpose carries Heat's type; STATUSES gives its status.
        return answer(exc)
    except Exception as exc:
        if (down := dependencies.down_in(exc)) is not None:
            log.warning("%s %s: %s is down: %r", request.method, request.path, down, exc)
            return fault(503, "HTTPServiceUnavailable", dependencies.unavailable_message(down),
                         headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
        log.exception("unhandled error on %s %s", request.method, request.path)
        return fault(500, "InternalServerError", "An unexpected error occurred; see the api log.")
