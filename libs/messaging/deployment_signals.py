"""NATS_SIGNAL: a deployment's answer published to JetStream by its agent, and read by a worker.

The agent publishes the body it would POST to the resource's signal URL (its outputs,
``deploy_stdout``, ``deploy_stderr``, ``deploy_status_code``) as it is, on the subject its
derived config names (``deploy_signal_subject``: ``<prefix>.signal.<project>.<stack>.<resource>``),
and waits for the stream's ack: once acked the answer is kept until a worker applied it. Its
``Nats-Msg-Id`` is the run's config hash, so an agent that publishes again (its ack lost, or
itself restarted) within the stream's duplicate window adds nothing; past it, the deployment's
compare-and-set makes the second one change nothing.

The consumer reads the raw body (:func:`decode_body`): what is not JSON is not a signal, and is
set aside as a dead letter rather than redelivered.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

import nats
import nats.errors
import orjson

from libs.messaging.payloads import Payload, PayloadError
from libs.messaging.permissions import inbox_prefix
from libs.messaging.subjects import Names


@dataclasses.dataclass(frozen=True)
class SignalBody(Payload):
    """A signal's details as published (any JSON value; None for an empty body, as the API reads it)."""

    kind: ClassVar[str] = "deployment_signal"
    details: Any = None


def decode_body(data: bytes) -> SignalBody:
    """The consumer's decoder: the raw body, not an Ember payload."""
    if not data.strip():
        return SignalBody(None)
    try:
        return SignalBody(orjson.loads(data))
    except orjson.JSONDecodeError as exc:
        raise PayloadError(f"a deployment signal that is not JSON: {exc}") from None


@dataclasses.dataclass(frozen=True)
class Publisher:
    """Where and as whom an agent publishes (its NATS settings)."""

    url: str
    prefix: str
    user: str | None
    password: str | None
    client_name: str


async def publish(publisher: Publisher, subject: str, body: bytes, *, msg_id: str, timeout: float) -> str:
    """Publish ``body`` on ``subject`` and wait for the stream's ack; what the ack said.

    One connection per signal: an agent signals seldom, and a connection that is not kept needs
    no looking after. It is not made again when lost: the caller tries again by its own backoff.
    Raises the client's errors (``nats.errors.Error``, ``OSError``, ``TimeoutError``).
    """
    errors: list[str] = []

    async def on_error(exc: Exception) -> None:
        errors.append(str(exc))  # a permissions violation comes this way, the publish then times out

    login: dict[str, Any] = {}
    if publisher.user:
        login = {"user": publisher.user, "password": publisher.password,
                 # Its user may read only its own inboxes (libs/messaging/permissions), where the ack comes.
                 "inbox_prefix": inbox_prefix(Names(publisher.prefix), publisher.user)}
    nc = await nats.connect(servers=[u.strip() for u in publisher.url.split(",")], name=publisher.client_name,
                            allow_reconnect=False, connect_timeout=min(timeout, 5.0), error_cb=on_error,
                            **login)
    try:
        try:
            ack = await nc.jetstream(timeout=timeout).publish(subject, body, headers={"Nats-Msg-Id": msg_id})
        except nats.errors.TimeoutError as exc:
            if errors:
                raise nats.errors.Error(f"{exc}; the server said: {errors[-1]}") from exc
            raise
        kept = " (a duplicate: kept once)" if ack.duplicate else ""
        return f"stream {ack.stream} sequence {ack.seq}{kept}"
    finally:
        await nc.close()

