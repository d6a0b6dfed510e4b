"""``ember observer``: the process entry point.

Whenever a listing is due (``EMBER_OBSERVE_INTERVAL``, per type
``EMBER_OBSERVE_INTERVALS``, per stack ``convergence.interval``; jittered, so
several observers do not move in step), and at least every
``EMBER_OBSERVE_INTERVAL``, one pass (:mod:`services.observer.sweep`) lists what
is due of the cloud projects this observer holds and records drift. With no cloud configured there is nothing
to list: it keeps its heartbeat and answers pings.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

from libs import background, dependencies, lifecycle
from libs.cloud import sdk
from libs.db import observer_leases
from libs.engine.observe_schedule import Intervals
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.telemetry import logs
from services.observer.sweep import Observer, sweep_once

log = logs.logger("observer")
# A pass whose listings are all overdue still yields before the next one.
_LEAST_WAIT = 0.1


async def observe_forever(ob: Observer) -> None:
    while True:
        began = time.monotonic()
        try:
            done = await sweep_once(ob)
            log.info("observed %d resource(s) of %d cloud project(s) (%d held) with %d list call(s):"
                     " %d drift opened, %d closed, %d heal(s) asked in %.2fs", done.compared,
                     done.targets, done.held, done.list_calls, done.opened, done.closed, done.heals,
                     time.monotonic() - began)
        except Exception as exc:  # the next pass tries again
            if (down := dependencies.down_in(exc)) is not None:
                log.warning("observing failed: %s is down: %s", down, exc)
            else:
                log.exception("observing failed")
        # Until the next listing is due; at least every default interval a pass renews the leases.
        await asyncio.sleep(max(_LEAST_WAIT, ob.schedule.wait(time.monotonic(), ob.intervals.default)))


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    async with sdk.opened(rt.settings.cloud, rt.tracer) as caller:
        if caller is None:
            yield  # no cloud: nothing to observe
            return
        settings = rt.settings
        ob = Observer(holder=rt.service_id, pool=rt.pool, caller=caller, cloud=settings.cloud,
                      registry=default_registry(), bus=rt.bus,
                      intervals=Intervals(settings.observe_interval, dict(settings.observe_type_intervals)),
                      default_policy=settings.drift_policy, heal_limit=settings.heal_limit)
        try:
            async with background.running(lambda: observe_forever(ob), name="observe"):
                yield
        finally:
            with contextlib.suppress(Exception):  # a lease left behind runs out by itself
                async with rt.pool.acquire() as conn:
                    await observer_leases.release(conn, rt.service_id)


def main() -> None:
    lifecycle.run("observer", body)
