"""What every service process holds: settings, tracer, pool, bus, heartbeat, control.

Entered as one nested async context manager and torn down in reverse, so the
heartbeat row is retired before the pool closes and the bus drains before the
tracer flushes.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
import uuid
from collections.abc import AsyncIterator

import asyncpg
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

from libs import background
from libs.config import Settings
from libs.db import migrate, services
from libs.db.pool import create_pool
from libs.errors import describe
from libs.messaging import permissions
from libs.messaging.bus import Bus, Message
from libs.messaging.payloads import Probe, ProbeReply
from libs.messaging.subjects import Names
from libs.telemetry import logs
from libs.telemetry.tracing import make_provider

log = logs.logger("runtime")


@dataclasses.dataclass
class Runtime:
    settings: Settings
    service: str
    service_id: uuid.UUID
    names: Names
    provider: TracerProvider
    tracer: Tracer
    pool: asyncpg.Pool
    bus: Bus
    started_at: float

    def probe_reply(self, probe_id: str) -> ProbeReply:
        return ProbeReply(probe_id=probe_id, service=self.service, service_id=str(self.service_id),
                          host=self.settings.hostname, pid=os.getpid(),
                          uptime_seconds=round(time.monotonic() - self.started_at, 3))

    async def answer_probe(self, probe: Probe, _delivery: object = None) -> None:
        """Reply to a health probe that reached this process through a queue."""
        if probe.expired(time.time()):
            return
        await self.bus.reply(probe.reply_to, self.probe_reply(probe.probe_id))


@contextlib.asynccontextmanager
async def heartbeat(pool: asyncpg.Pool, rt_service: str, service_id: uuid.UUID,
                    settings: Settings) -> AsyncIterator[None]:
    async with pool.acquire() as conn:
        await services.register(conn, service_id=service_id, service=rt_service,
                                host=settings.hostname, hostname=settings.hostname, pid=os.getpid(),
                                topic=f"{settings.nats_prefix}.{rt_service}",
                                report_interval=settings.report_interval)

    async def beat_forever() -> None:
        while True:
            await asyncio.sleep(settings.report_interval)
            try:
                async with pool.acquire() as conn:
                    await services.beat(conn, service_id)
            except Exception as exc:
                # A missed beat shows as "down" in GET /services; keep trying, whatever
                # failed: a heartbeat that stopped would show the service down for good.
                log.warning("heartbeat failed: %s", describe(exc))

    try:
        async with background.running(beat_forever, name="heartbeat"):
            yield
    finally:
        with contextlib.suppress(OSError, asyncpg.PostgresError):
            async with pool.acquire() as conn:
                await services.retire(conn, service_id)


@contextlib.asynccontextmanager
async def open_runtime(settings: Settings, service: str) -> AsyncIterator[Runtime]:
    database_url, nats_url = settings.require_urls()
    service_id = uuid.uuid4()
    names = Names(settings.nats_prefix)
    async with contextlib.AsyncExitStack() as stack:
        provider = make_provider(settings.telemetry, service, str(service_id))
        stack.callback(provider.shutdown)
        tracer = provider.get_tracer(f"ember.{service}")
        pool = await stack.enter_async_context(
            create_pool(database_url, min_size=1, max_size=settings.db_pool_size,
                        application_name=f"ember-{service}"))
        async with pool.acquire() as conn:
            await migrate.migrate(conn)
        bus = await stack.enter_async_context(
            Bus.connect(nats_url, names, tracer, client_name=f"ember-{service}-{service_id}",
                        replicas=settings.nats_replicas, user=settings.nats_user,
                        password=settings.nats_password))
        row = permissions.uses(names, service)
        await bus.ensure_topology(streams=row.streams, consumers=row.consumers)
        rt = Runtime(settings=settings, service=service, service_id=service_id, names=names,
                     provider=provider, tracer=tracer, pool=pool, bus=bus,
                     started_at=time.monotonic())
        await stack.enter_async_context(heartbeat(pool, service, service_id, settings))

        async def on_ping(msg: Message) -> bytes:
            return rt.probe_reply(msg.data.decode() or "ping").to_bytes()

        # No queue group: every instance answers, so a ping counts the live processes.
        sub = await bus.serve(names.control_ping(service), on_ping)
        stack.push_async_callback(sub.unsubscribe)
        yield rt
