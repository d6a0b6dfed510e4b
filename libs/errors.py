"""The error taxonomy: the error carries its retry decision.

A message handler raises one of these (or returns normally); the consumer maps
the type to a JetStream outcome in exactly one place (``libs.messaging.consumer``).

Three kinds of "not now" are told apart by type, never by message:

- a wait (:class:`Retry`, :class:`Conflict`): the work is under way or someone
  holds what it needs; it may go on for as long as the cloud takes and never
  counts as a failure;
- the machinery failing (:func:`is_transient`: the database or NATS unreachable,
  a serialization conflict, a timeout): tried again with a growing delay, and
  never held against the work itself;
- any other error: tried again with a growing delay, but an error that comes
  back :data:`GIVE_UP_AFTER` times would come back every time, so the consumer
  gives up and the handler fails what the message was for, with the reason.
"""

from __future__ import annotations

import asyncio
from typing import Final

import asyncpg

from libs.messaging.failures import BUS_ERROR

# How many times one message's handler may fail with the same kind of error before
# the consumer stops retrying it (about 7.5 s of backoff): the one "give up after N" rule.
GIVE_UP_AFTER: Final = 5


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


class Undeliverable(EmberError):
    """A message NATS can never take (over the server's payload limit): set it aside, never retry it.

    Not :class:`Permanent`: a handler that cannot publish what it must has failed,
    and what it was for fails with the reason rather than being silently dropped.
    """


class NeverHandled(EmberError):
    """A message delivered as often as its consumer allows (``max_deliver``) and never settled:
    each delivery died with its process, or outlasted its ack wait."""


# Failures of the machinery rather than of the work: they pass when the servers come back.
_TRANSIENT: Final = (OSError, asyncio.TimeoutError, asyncpg.PostgresConnectionError, asyncpg.InterfaceError,
                     asyncpg.TransactionRollbackError, asyncpg.CannotConnectNowError,
                     asyncpg.TooManyConnectionsError, BUS_ERROR)


def is_transient(error: BaseException) -> bool:
    """Whether ``error`` is the database or NATS failing, which retrying outlasts."""
    return isinstance(error, _TRANSIENT)


def describe(error: BaseException) -> str:
    """An unexpected error as a reason a user reads: its type and its message."""
    return f"{type(error).__name__}: {error}"
