"""``ember observer``: the process entry point."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from libs import lifecycle
from libs.runtime import Runtime


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    # The observer consumes no queue: it polls the cloud on its own schedule.
    # Until resource plugins exist there is nothing to poll, so it only keeps
    # its heartbeat and answers control pings through the runtime.
    yield


def main() -> None:
    lifecycle.run("observer", body)
