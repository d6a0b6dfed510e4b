"""A server's deployments pushed to its agent over core NATS, beside the agent's polling.

The body is the API's ``GET /v1/{project}/software_deployments/metadata/{server_id}``
answer, ``{"metadata": [<derived config>...]}``, on ``<prefix>.deployments.<project>.<server>``.
No stream keeps it: the agent polls the API as well, so a push missed while it
was down or disconnected costs one polling interval, and JetStream would only
keep stale copies of what the API serves anyway.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import orjson
from nats.aio.msg import Msg

from libs.messaging.bus import Bus
from libs.telemetry import logs

log = logs.logger("bus")


def body(metadata: Sequence[Mapping[str, Any]]) -> bytes:
    return orjson.dumps({"metadata": list(metadata)})


async def publish(bus: Bus, project: str, server_id: str, metadata: Sequence[Mapping[str, Any]]) -> None:
    """Push every derived config of ``server_id`` (the whole list, as the API serves it)."""
    await bus.nc.publish(bus.names.deployments(project, server_id), body(metadata))


def parse(data: bytes) -> list[Any] | None:
    """The metadata list of a pushed body; None when it is not one."""
    try:
        decoded = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    metadata = decoded.get("metadata") if isinstance(decoded, dict) else None
    return metadata if isinstance(metadata, list) else None


@contextlib.asynccontextmanager
async def listening(bus: Bus, project: str, server_id: str,
                    on_metadata: Callable[[list[Any]], None]) -> AsyncIterator[None]:
    """Call ``on_metadata`` with each list pushed for ``server_id`` while the block runs.

    The subscription is the client's: it is made again after a reconnect.
    """
    subject = bus.names.deployments(project, server_id)

    async def on_message(msg: Msg) -> None:
        metadata = parse(msg.data)
        if metadata is None:
            log.warning("ignored a deployments push that is not {\"metadata\": [...]}",
                        extra={"subject": msg.subject, "size": len(msg.data)})
            return
        on_metadata(metadata)

    sub = await bus.nc.subscribe(subject, cb=on_message)
    # The server has the subscription before the caller counts on it.
    await bus.nc.flush()
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            await sub.unsubscribe()
