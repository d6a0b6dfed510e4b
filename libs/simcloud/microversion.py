"""Microversions: the version a call asks for (``OpenStack-API-Version: compute 2.79``), checked and echoed.

A service's sub-app adds :func:`middleware` with its name and range; a handler
reads ``microversion_of(request)`` (a comparable tuple) to shape its answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Middleware

from libs.simcloud.errors import ApiError

Version = tuple[int, int]
MICROVERSION = web.RequestKey("simcloud_microversion", tuple[int, int])


@dataclasses.dataclass(frozen=True)
class Range:
    service: str  # the name in the header: "compute", "volume"
    legacy_header: str | None  # "X-OpenStack-Nova-API-Version"
    minimum: Version
    maximum: Version

    def text(self, version: Version) -> str:
        return f"{version[0]}.{version[1]}"


def parse(text: str) -> Version:
    major, _, minor = text.strip().partition(".")
    return int(major), int(minor)


def asked(headers: Mapping[str, str], span: Range) -> str | None:
    """The version text a request asks for, from the standard header or the legacy one."""
    standard = headers.get("OpenStack-API-Version")
    if standard:
        for part in str(standard).split(","):
            name, _, value = part.strip().partition(" ")
            if name.lower() == span.service:
                return value.strip()
    if span.legacy_header:
        legacy = headers.get(span.legacy_header)
        if legacy:
            return str(legacy)
    return None


def choose(text: str | None, span: Range) -> Version:
    """The version a call is answered at: the minimum when none is asked, 406 outside the range."""
    if text is None:
        return span.minimum
    if text.lower() == "latest":
        return span.maximum
    try:
        version = parse(text)
    except ValueError:
        raise ApiError(400, f"Invalid API version request string {text}") from None
    if not span.minimum <= version <= span.maximum:
        raise ApiError(406, f"Version {text} is not supported by the API. Minimum is "
                            f"{span.text(span.minimum)} and maximum is {span.text(span.maximum)}.")
    return version


def microversion_of(request: web.Request) -> Version:
    found = request.get(MICROVERSION)
    return found if isinstance(found, tuple) else (2, 1)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def middleware(span: Range) -> Middleware:
    """Sets the request's version and echoes it in the answer's headers (after the error middleware)."""

    @web.middleware
    async def versioned(request: web.Request, handler: Handler) -> web.StreamResponse:
        version = choose(asked(request.headers, span), span)
        request[MICROVERSION] = version
        text = span.text(version)
        try:
            response = await handler(request)
        except ApiError as exc:
            exc.headers.update(_headers(span, text))
            raise
        response.headers.update(_headers(span, text))
        return response

    return versioned


def _headers(span: Range, text: str) -> dict[str, str]:
    headers = {"OpenStack-API-Version": f"{span.service} {text}",
               "Vary": "OpenStack-API-Version" + (f", {span.legacy_header}" if span.legacy_header else "")}
    if span.legacy_header:
        headers[span.legacy_header] = text
    return headers
