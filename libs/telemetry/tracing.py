"""One OpenTelemetry tracer provider per service process.

The provider is passed down explicitly rather than installed globally, so that
several services can share one process in tests and each keeps its own
``service.name``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

from libs.config import TelemetrySettings


class JsonLinesSpanExporter(SpanExporter):
    """Appends one JSON object per finished span to a file.

    Several processes may share the file: each line is written with one
    ``write`` call on a file opened for append, which POSIX keeps whole.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            ctx = span.get_span_context()
            if ctx is None:
                continue
            parent = span.parent
            lines.append(json.dumps({
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
            }))
        if lines:
            with self._lock, self._path.open("a", encoding="utf-8") as fh:
                fh.write("\n".join(lines) + "\n")
        return SpanExportResult.SUCCESS


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
    exporter: SpanExporter | None = None
    if settings.exporter == "console":
        exporter = ConsoleSpanExporter(service_name=f"{settings.service_namespace}-{service}")
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif settings.exporter == "file":
        assert settings.file is not None  # checked when the settings were parsed
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(settings.file)))
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
