"""What every service of the simulator holds: the database, the settings in force, ids and time.

A service module is ``make_app(state: SimState) -> web.Application``; its
handlers reach the state through ``request.app[STATE]`` (sub-apps get it too).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import random
import secrets
import time
import uuid
from collections.abc import Awaitable, Callable

import asyncpg
from aiohttp import web

from libs.db import Conn

UTC = datetime.UTC


class ServiceName(enum.StrEnum):
    """A simulated service, by the first segment of its paths."""

    IDENTITY = "identity"
    COMPUTE = "compute"
    IMAGE = "image"
    NETWORK = "network"
    VOLUME = "volume"


@dataclasses.dataclass(frozen=True)
class SimSettings:
    """How the simulated cloud behaves; the chaos API replaces them while it runs."""

    # Seconds a server spends in BUILD (and a resize in RESIZE, a reboot in REBOOT).
    boot_seconds: float = 2.0
    # Share of boots (0..1) that end in ERROR with a fault instead of ACTIVE.
    error_share: float = 0.0
    # Seconds a volume spends creating / attaching / detaching.
    volume_seconds: float = 1.0
    # Seconds an image import (web-download) spends importing.
    import_seconds: float = 1.0
    # Servers a project may have (Nova's instances quota); 0: no limit. A create past it is Nova's
    # 403 "Quota exceeded for instances".
    server_quota: float = 0
    # Seconds a deleted server is still shown (task_state "deleting", then 404); 0: gone at once.
    delete_seconds: float = 1.0
    # Seed of the draws that choose which boots fail (the n-th boot's fate is fixed by it); -1: unseeded.
    seed: float = -1


@dataclasses.dataclass(frozen=True)
class Fault:
    """Calls to one service (or every one: ``service`` None) fail with ``status`` or answer late."""

    id: str
    service: ServiceName | None
    status: int | None  # None: answer normally, after ``delay``
    delay: float
    until: float  # time.time() after which it is over
    method: str | None = None  # only this HTTP method
    remaining: int | None = None  # only this many more calls (None: any number until ``until``)
    share: float = 1.0  # the share of the calls it matches that it hits
    # Seconds the answer is held back after the call is carried out (the cloud did it; the caller
    # does not know yet): a caller that dies meanwhile lost the answer of a call that took effect.
    hold: float = 0.0

    def applies(self, service: ServiceName | None, method: str, now: float) -> bool:
        if now >= self.until or (self.remaining is not None and self.remaining <= 0):
            return False
        if self.service is not None and self.service != service:
            return False
        return self.method is None or self.method == method

    def as_json(self) -> dict[str, object]:
        return {"id": self.id, "service": self.service, "status": self.status, "delay": self.delay,
                "until": self.until, "method": self.method, "remaining": self.remaining, "share": self.share,
                "hold": self.hold}


class SimState:
    """The simulator's process-wide state: one per server, shared by every service's app."""

    def __init__(self, pool: asyncpg.Pool, settings: SimSettings, token_secret: bytes,
                 rng: random.Random | None = None) -> None:
        self.pool = pool
        self.settings = settings
        self.token_secret = token_secret
        self.faults: list[Fault] = []
        # Set (and replaced) when the faults are cleared: the answers held back go out then.
        self.released = asyncio.Event()
        # Calls a fault delays or holds that have not answered yet (a test waits for them to land).
        self.faulted_under_way = 0
        self.rng = rng or random.Random()
        self.boot_rng = boot_draws(settings)
        # Lazy transitions one service settles and another reads: a service registers its own in
        # make_app (e.g. Cinder: settlers["volumes"] = its settle), the reader calls settle("volumes").
        self.settlers: dict[str, Settler] = {}

    async def settle(self, name: str, conn: Conn) -> None:
        """Finish the due transitions of ``name``'s objects, if the service that owns them registered."""
        settler = self.settlers.get(name)
        if settler is not None:
            await settler(conn, self.clock())

    @staticmethod
    def new_id() -> str:
        return str(uuid.uuid4())

    @staticmethod
    def now() -> datetime.datetime:
        return datetime.datetime.now(UTC)

    @staticmethod
    def clock() -> float:
        return time.time()

    def fails(self) -> bool:
        """Whether this boot is one of the ``error_share`` that end in ERROR."""
        return self.boot_rng.random() < self.settings.error_share

    def faults_for(self, service: ServiceName | None, method: str) -> list[Fault]:
        now = self.clock()
        self.faults = [f for f in self.faults if now < f.until and (f.remaining is None or f.remaining > 0)]
        return [f for f in self.faults if f.applies(service, method, now)
                and (f.share >= 1 or self.rng.random() < f.share)]

    def spend(self, fault: Fault) -> None:
        """Count one call against a fault limited to a number of calls."""
        if fault.remaining is None:
            return
        self.faults = [dataclasses.replace(f, remaining=(f.remaining or 0) - 1) if f.id == fault.id else f
                       for f in self.faults]


def boot_draws(settings: SimSettings) -> random.Random:
    """The draws of boots' fates: their own, so that other draws (MACs, faults' shares) leave them be."""
    return random.Random(int(settings.seed)) if settings.seed >= 0 else random.Random()


STATE = web.AppKey("simcloud_state", SimState)
Settler = Callable[[Conn, float], Awaitable[None]]  # (connection, time.time()) -> None


def state_of(request: web.Request) -> SimState:
    return request.app[STATE]


def new_secret() -> str:
    return secrets.token_hex(32)


def iso(moment: datetime.datetime | None) -> str | None:
    """OpenStack's timestamp form: seconds, UTC, a Z."""
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
