"""W3C trace context in NATS message headers and database rows, so one trace crosses every service."""

from __future__ import annotations

import dataclasses
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


@dataclasses.dataclass(frozen=True)
class Stored:
    """A trace context as two columns of a row (``traceparent``, ``tracestate``).

    What is written now and acted on later, by another process (an event the
    notifier publishes, a delivery it sends, a paused node a clear re-queues),
    keeps the trace of the operation that wrote it.
    """

    traceparent: str | None = None
    tracestate: str | None = None

    @classmethod
    def of(cls, context: Context | None = None) -> Stored:
        """The current span's context (or ``context``'s), to store."""
        headers = inject({}, context)
        return cls(headers.get("traceparent"), headers.get("tracestate"))

    def headers(self) -> dict[str, str]:
        return {k: v for k, v in (("traceparent", self.traceparent), ("tracestate", self.tracestate)) if v}

    def context(self) -> Context:
        """The stored span as a remote parent; an empty context when none was stored."""
        return extract(self.headers())
