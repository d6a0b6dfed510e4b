"""A small cloud kept in memory behind the real ``CloudCaller`` protocol: servers made, shown, deleted.

Not a stand-in for openstacksdk: a cloud of its own, with the one rule the
worker's Call effect must respect (a create call made twice makes two
servers). It counts what was made, can die right after making a call (the
worker's process dying before the answer is recorded), and checks that no
advisory lock is held while it answers.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

import asyncpg

from libs.cloud.caller import CloudTarget
from libs.cloud.calls import Answer, CloudCall, CloudError, ErrorKind, Service
from tests.sim.harness import SimulatedCrash


class MemoryCloud:
    def __init__(self, pool: asyncpg.Pool | None = None, *, boot_polls: int = 1) -> None:
        self.servers: dict[str, dict[str, Any]] = {}
        self.creates = 0
        self.calls: list[str] = []
        self.targets: set[CloudTarget] = set()
        self.boot_polls = boot_polls
        # Die right after making calls of these methods, this many times.
        self.crash_after: dict[str, int] = {}
        # Answer calls of these methods with a server error (making nothing), this many times.
        self.fail_next: dict[str, int] = {}
        self.in_flight = 0
        self.most_in_flight = 0
        # Checked at each call: the worker holds no advisory lock while the cloud answers.
        self._pool = pool
        self.locks_seen: list[int] = []
        self._ids = itertools.count(1)

    async def call(self, target: CloudTarget, calls: Sequence[CloudCall]) -> dict[str, Answer]:
        self.targets.add(target)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self._pool is not None:
                async with self._pool.acquire() as conn:
                    self.locks_seen.append(await conn.fetchval(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted"))
            await asyncio.sleep(0)  # answering takes a turn of the loop: other callers go on meanwhile
            answers = {c.key: self._one(c) for c in calls}
        finally:
            self.in_flight -= 1
        for c in calls:
            if self.crash_after.get(c.method, 0) > 0:
                self.crash_after[c.method] -= 1
                raise SimulatedCrash(f"died after {c.describe()} reached the cloud")
        return answers

    def _one(self, call: CloudCall) -> Answer:
        self.calls.append(call.describe())
        if self.fail_next.get(call.method, 0) > 0:
            self.fail_next[call.method] -= 1
            return _error(ErrorKind.SERVER, "Service Unavailable", 503)
        if call.service is not Service.COMPUTE:
            return _error(ErrorKind.NOT_FOUND, f"no service {call.service}", 404)
        if call.method == "create_server":
            self.creates += 1
            sid = f"srv-{next(self._ids)}"
            self.servers[sid] = {"id": sid, "name": call.kwargs["name"], "status": "BUILD", "polls": 0}
            return Answer(_shown(self.servers[sid]))
        if call.method == "servers":
            return Answer([_shown(s) for s in self.servers.values() if s["name"] == call.kwargs.get("name")])
        server = self.servers.get(str(call.args[0]))
        if server is None:
            return _error(ErrorKind.NOT_FOUND, f"No Server found for {call.args[0]}", 404)
        if call.method == "get_server":
            server["polls"] += 1
            if server["polls"] >= self.boot_polls:
                server["status"] = "ACTIVE"
            return Answer(_shown(server))
        if call.method == "delete_server":
            del self.servers[server["id"]]
            return Answer(None)
        return _error(ErrorKind.BAD_REQUEST, f"unknown method {call.method}", 400)


def _shown(server: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in server.items() if k != "polls"}


def _error(kind: ErrorKind, message: str, status: int) -> Answer:
    return Answer(error=CloudError(kind, message, status))
