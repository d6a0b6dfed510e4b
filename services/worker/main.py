"""``ember worker``: the process entry point."""

from __future__ import annotations

from libs import lifecycle
from libs.consuming import consuming
from libs.messaging.consumer import Handler
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import Probe
from libs.runtime import Runtime


def handlers(rt: Runtime) -> Handler:
    return Dispatch({Probe: rt.answer_probe})


body = consuming(lambda rt: rt.names.workers, handlers)


def main() -> None:
    lifecycle.run("worker", body)
