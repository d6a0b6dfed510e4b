"""Running one service process: config, logs, signals, runtime, graceful drain.

A service supplies ``body(runtime)``: an async context manager that starts its
consumers on enter and drains them on exit. SIGTERM or SIGINT ends the wait;
the body gets ``shutdown_grace`` seconds to finish what it holds, then the
runtime closes in reverse order.
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
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with open_runtime(settings, service) as rt, body(rt):
            log.info("%s ready", service, extra={"service_id": str(rt.service_id)})
            await stop.wait()
            log.info("%s stopping (grace %.1fs)", service, settings.shutdown_grace)
        log.info("%s stopped", service)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)


def run(service: str, body: Body) -> None:
    """The whole life of ``ember <service>``."""
    settings = load_settings_or_exit(need_urls=True)
    logs.configure(service, settings.hostname, settings.log_level, settings.log_format)
    asyncio.run(serve(settings, service, body))
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # Everything is closed; what is left is a thread blocked in a cloud call whose answer no
        # one will read (libs.cloud.sdk's close says so). The interpreter would join it at exit.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
