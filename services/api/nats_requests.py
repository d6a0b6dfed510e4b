"""Requests the api answers over NATS (hook clears, scaling): served for the app's lifetime.

Each request gets an answer whatever happens: a refusal or a failure comes back
as the reply's ``error`` (and in the api's log), in the requester's trace.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol, TypeVar

from aiohttp import web

from libs.messaging.bus import Message
from libs.telemetry import logs
from services.api.keys import RUNTIME

log = logs.logger("api")


class Reply(Protocol):
    @property
    def error(self) -> str: ...

    def to_bytes(self) -> bytes: ...


R = TypeVar("R", bound=Reply)


@contextlib.asynccontextmanager
async def answering(app: web.Application, subject: str, what: str,
                    answer: Callable[[web.Application, Message], Awaitable[R]],
                    failed: Callable[[str], R]) -> AsyncIterator[None]:
    """Answer ``what`` requests on ``subject`` (one queue group for every api process)."""

    async def handle(msg: Message) -> bytes:
        reply: Reply
        try:
            reply = await answer(app, msg)
        except Exception as exc:  # the caller gets an answer whatever happens
            log.exception("%s on %s failed", what, msg.subject)
            reply = failed(f"{type(exc).__name__}: {exc}")
        else:
            if reply.error:
                # The caller has the reason in its reply; the operator sees it here.
                log.warning("%s on %s refused: %s", what, msg.subject, reply.error)
        return reply.to_bytes()

    # In the requester's trace, which the reply carries back.
    sub = await app[RUNTIME].bus.serve(subject, handle, queue="api")
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
