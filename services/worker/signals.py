"""The ``deployment-signals`` consumer: agents' NATS_SIGNAL answers applied to their deployments.

Each is applied by :func:`libs.software_signals.apply_published`, as the API applies a POST to
the resource's signal route, and acked. One whose stack or resource is gone (or was never
there, or is another project's) is logged and acked: it will never find them. The database
failing is the consumer's to retry; a body that is not JSON never reaches here (the decoder
sets it aside as a dead letter).
"""

from __future__ import annotations

from libs import software_signals
from libs.consuming import consuming
from libs.messaging.consumer import Delivery, Handler
from libs.messaging.deployment_signals import SignalBody, decode_body
from libs.messaging.payloads import Payload
from libs.runtime import Runtime
from libs.software_signals import Applied
from libs.telemetry import logs

log = logs.logger("worker")


def handler(rt: Runtime) -> Handler:
    async def handle(payload: Payload, delivery: Delivery) -> None:
        assert isinstance(payload, SignalBody)  # decode_body makes nothing else
        applied = await software_signals.apply_published(rt.pool, rt.names, delivery.subject, payload.details)
        quiet = applied in (Applied.CHANGED, Applied.UNCHANGED)
        (log.info if quiet else log.warning)("deployment signal %s: %s", applied.value, delivery.subject,
                                             extra={"subject": delivery.subject, "applied": applied.value,
                                                    "delivery": delivery.num_delivered})

    return handle


# Signals are few and quick: a handful at once leaves the worker's slots to steps.
answering = consuming(lambda rt: rt.names.deployment_signals, handler, concurrency_of=lambda rt: 8,
                      decoder=decode_body)
