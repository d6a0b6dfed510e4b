"""One OpenTelemetry tracer provider per service process.

The provider is passed down explicitly rather than installed globally, so that
several services can share one process in tests and each keeps its own
``service.name``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from libs.config import TelemetrySettings


class JsonLinesSpanExporter(SpanExporter):
    """Appends one JSON object per finished span to a file, or to standard output (no path).

    Several processes may share the file: each batch is written with one
    ``write`` call on a file opened for append, which POSIX keeps whole.
    """

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = [orjson.dumps(line) for line in map(_line, spans) if line is not None]
        if not lines:
            return SpanExportResult.SUCCESS
        text = b"\n".join(lines) + b"\n"
        with self._lock:
            if self._path is None:
                sys.stdout.buffer.write(text)
                sys.stdout.flush()
            else:
                with self._path.open("ab") as fh:
                    fh.write(text)
        return SpanExportResult.SUCCESS


def _line(span: ReadableSpan) -> dict[str, Any] | None:
    ctx = span.get_span_context()
    if ctx is None:
        return None
    parent = span.parent
    return {
        "name": span.name,
        "service": (span.resource.attributes.get("service.name") if span.resource else None),
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent else None,
        "kind": span.kind.name,
        "status": span.status.status_code.name,
        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
        # A batch's span links the spans of the items it stepped (each in its own trace).
        "links": [{"trace_id": format(link.context.trace_id, "032x"),
                   "span_id": format(link.context.span_id, "016x")} for link in span.links],
        "start": span.start_time,
        "end": span.end_time,
    }


# Spans are written from the processor's thread, in batches: written one by one as each span
# ended, formatting and writing them took 10-15% of every service's time under load (bench.scale).
# Half a second keeps a span file nearly live for a person (or a test) reading it.
_EXPORT_DELAY_MS = 500
_QUEUE = 16384


def _batched(exporter: SpanExporter) -> BatchSpanProcessor:
    return BatchSpanProcessor(exporter, max_queue_size=_QUEUE, schedule_delay_millis=_EXPORT_DELAY_MS)


def _plain(value: object) -> object:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return list(value) if isinstance(value, (tuple, list)) else str(value)


def make_provider(settings: TelemetrySettings, service: str, instance_id: str) -> TracerProvider:
    resource = Resource.create({
        "service.name": f"{settings.service_namespace}-{service}",
        "service.namespace": settings.service_namespace,
        "service.instance.id": instance_id,
    })
    provider = TracerProvider(resource=resource)
    if settings.exporter == "console":
        provider.add_span_processor(_batched(JsonLinesSpanExporter()))
    elif settings.exporter == "file":
        assert settings.file is not None  # checked when the settings were parsed
        provider.add_span_processor(_batched(JsonLinesSpanExporter(settings.file)))
    elif settings.exporter == "otlp":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        assert settings.otlp_endpoint is not None
        endpoint = settings.otlp_endpoint.rstrip("/")
        if not endpoint.endswith("/v1/traces"):
            endpoint += "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def tracer(provider: TracerProvider, name: str) -> trace.Tracer:
    return provider.get_tracer(name)
