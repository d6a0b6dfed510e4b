"""W3C trace context in NATS message headers, so one trace crosses every service."""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.context import Context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

_PROPAGATOR = TraceContextTextMapPropagator()


def inject(headers: dict[str, str], context: Context | None = None) -> dict[str, str]:
    """Add ``traceparent`` (and ``tracestate``) for the current span to ``headers``."""
    _PROPAGATOR.inject(headers, context=context)
    return headers


def extract(headers: Mapping[str, str] | None) -> Context:
    """The remote parent carried by ``headers``; an empty context when there is none."""
    return _PROPAGATOR.extract(dict(headers or {}))
