"""A server span per HTTP request, continuing a caller's W3C ``traceparent`` if sent."""

from __future__ import annotations

from aiohttp import web
from opentelemetry import trace
from opentelemetry.trace import SpanKind

from libs.telemetry import propagation
from services.api.faults import Handler
from services.api.keys import RUNTIME


@web.middleware
async def tracing_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    rt = request.app[RUNTIME]
    route = request.match_info.route.resource
    template = route.canonical if route is not None else request.path
    with rt.tracer.start_as_current_span(
        f"{request.method} {template}", kind=SpanKind.SERVER,
        context=propagation.extract(request.headers),
        attributes={"http.request.method": request.method, "url.path": request.path},
    ) as span:
        response = await handler(request)
        span.set_attribute("http.response.status_code", response.status)
        if response.status >= 500:
            span.set_status(trace.StatusCode.ERROR)
        return response
