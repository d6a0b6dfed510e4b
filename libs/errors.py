"""The error taxonomy: the error carries its retry decision.

A message handler raises one of these (or returns normally); the consumer maps
the type to a JetStream outcome in exactly one place (``libs.messaging.consumer``).
"""

from __future__ import annotations


class EmberError(Exception):
    """Base of Ember's own errors."""


class Retry(EmberError):
    """Not done yet: run again after ``delay`` seconds (a step that is still waiting)."""

    def __init__(self, delay: float, reason: str = "") -> None:
        super().__init__(reason or f"retry in {delay:g}s")
        self.delay = delay


class Conflict(Retry):
    """Someone else holds what this needs (a resource lock): try again shortly."""

    def __init__(self, reason: str, delay: float = 0.2) -> None:
        super().__init__(delay, reason)


class Permanent(EmberError):
    """Retrying cannot help (bad payload, a decision already made): drop the message."""
