"""Structured logs: one JSON object per line, with stack/traversal/resource ids.

The ids live in context variables, so a handler sets them once (``log_context``)
and every line it logs, at any depth, carries them, along with the current
trace and span ids for finding the line from a trace.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import logging
import sys
from collections.abc import Iterator
from typing import Any

import orjson
from opentelemetry import trace

_EMPTY: dict[str, str] = {}
# The default is never mutated: log_context always sets a fresh dict.
_CONTEXT: contextvars.ContextVar[dict[str, str]] = contextvars.ContextVar(
    "ember_log_context", default=_EMPTY)

_RESERVED = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


@contextlib.contextmanager
def log_context(**ids: str | None) -> Iterator[None]:
    """Attach ids (``stack_id=``, ``traversal_id=``, ``resource=`` ...) to every log line inside."""
    merged = {**_CONTEXT.get(), **{k: v for k, v in ids.items() if v is not None}}
    token = _CONTEXT.set(merged)
    try:
        yield
    finally:
        _CONTEXT.reset(token)


def current_context() -> dict[str, str]:
    return dict(_CONTEXT.get())


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str, host: str) -> None:
        super().__init__()
        self._service = service
        self._host = host

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "ts": datetime.datetime.fromtimestamp(record.created, datetime.UTC).isoformat(
                timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "service": self._service,
            "host": self._host,
            "msg": record.getMessage(),
        }
        body.update(_CONTEXT.get())
        span = trace.get_current_span().get_span_context()
        if span.is_valid:
            body["trace_id"] = format(span.trace_id, "032x")
            body["span_id"] = format(span.span_id, "016x")
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                body[key] = value
        if record.exc_info:
            body["exc"] = self.formatException(record.exc_info)
        return orjson.dumps(body, default=str).decode()


class TextFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__("%(asctime)s %(levelname)-7s " + service + " %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = _CONTEXT.get()
        if ids:
            line += " [" + " ".join(f"{k}={v}" for k, v in ids.items()) + "]"
        return line


def configure(service: str, host: str, level: str, fmt: str) -> None:
    """Route every ``ember.*`` logger (and warnings from libraries) to stderr."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service, host) if fmt == "json" else TextFormatter(service))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("ember").setLevel(level)


def logger(name: str) -> logging.Logger:
    """Fixed logger names (``ember.worker``, ``ember.db``) so operators can filter on them."""
    return logging.getLogger(f"ember.{name}")
