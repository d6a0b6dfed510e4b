"""Running one service process: config, logs, signals, runtime, graceful drain.

A service supplies ``body(runtime)``: an async context manager that starts its
consumers on enter and drains them on exit. SIGTERM or SIGINT ends the wait;
the body gets ``shutdown_grace`` seconds to finish what it holds, then the
runtime closes in reverse order. A close that waits on a server already gone
(``ember dev`` killed as a whole takes PostgreSQL and NATS with it) does not
hold the process: :data:`TEARDOWN_MARGIN` seconds past the grace it exits anyway,
which costs nothing a crash would not (every step is redelivered).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from libs import config
from libs.runtime import Runtime, open_runtime
from libs.telemetry import logs
from libs.template import budgets

Body = Callable[[Runtime], AbstractAsyncContextManager[None]]

TEARDOWN_MARGIN = 5.0


def load_settings_or_exit(*, need_urls: bool = False) -> config.Settings:
    """Settings from the environment; a bad value ends the process with one line naming it."""
    try:
        settings = config.load(os.environ)
        if need_urls:
            settings.require_urls()
    except config.ConfigError as exc:
        print(f"ember: bad configuration: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    return settings


async def serve(settings: config.Settings, service: str, body: Body) -> None:
    log = logs.logger(service)
    budgets.configure(settings.budgets)
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    ready = False

    def stopping() -> None:
        # Before ready it holds no work to drain, and may be waiting for servers that are gone.
        if not stop.is_set():
            leave_by_deadline(settings, service, grace=settings.shutdown_grace if ready else 0.0)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stopping)
    try:
        async with open_runtime(settings, service) as rt, body(rt):
            ready = True
            log.info("%s ready", service, extra={"service_id": str(rt.service_id)})
            await stop.wait()
            log.info("%s stopping (grace %.1fs)", service, settings.shutdown_grace)
        log.info("%s stopped", service)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def leave_by_deadline(settings: config.Settings, service: str, *, grace: float | None = None) -> None:
    """From now, the process has ``grace`` (the shutdown grace) plus :data:`TEARDOWN_MARGIN`
    seconds to close; then it exits whatever it still waits on. Called once a stop began."""
    log = logs.logger(service)
    asyncio.get_running_loop().call_later(
        (settings.shutdown_grace if grace is None else grace) + TEARDOWN_MARGIN, _abandon, log, service)


def _abandon(log: logging.Logger, service: str) -> None:
    log.warning("%s did not close within its grace and margin: leaving without the rest", service)
    _exit_now()


def _exit_now() -> None:
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run(service: str, body: Body) -> None:
    """The whole life of ``ember <service>``."""
    settings = load_settings_or_exit(need_urls=True)
    logs.configure(service, settings.hostname, settings.log_level, settings.log_format)
    asyncio.run(serve(settings, service, body))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # Everything is closed; what is left is a thread blocked in a cloud call whose answer no
        # one will read (libs.cloud.sdk's close says so). The interpreter would join it at exit.
        _exit_now()
