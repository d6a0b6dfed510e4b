"""Tracing, trace-context propagation through NATS headers, and structured logs."""
