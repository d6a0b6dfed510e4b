"""A trace context kept in a row continues the same trace, tracestate included."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from libs.telemetry.propagation import Stored, extract


def test_a_stored_context_continues_the_trace_it_was_stored_in() -> None:
    tracer = TracerProvider().get_tracer("test")
    caller = extract({"traceparent": f"00-{'1f' * 16}-{'2e' * 8}-01", "tracestate": "vendor=x"})
    with tracer.start_as_current_span("step", context=caller) as step:
        stored = Stored.of()
    assert stored.headers() == {"traceparent": f"00-{'1f' * 16}-{step.get_span_context().span_id:016x}-01",
                                "tracestate": "vendor=x"}
    with tracer.start_as_current_span("later", context=stored.context()) as later:
        assert later.get_span_context().trace_id == int("1f" * 16, 16)
        assert isinstance(later, ReadableSpan) and later.parent is not None
        assert later.parent.span_id == step.get_span_context().span_id


def test_nothing_stored_starts_a_trace_of_its_own() -> None:
    assert Stored.of().headers() == {}  # no span is current
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("alone", context=Stored().context()) as alone:
        assert isinstance(alone, ReadableSpan) and alone.parent is None
    assert trace.get_current_span() is trace.INVALID_SPAN
