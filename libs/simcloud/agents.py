"""The simulator's software-config agents: an ``ember agent`` for each ACTIVE server booted for one.

A real image with os-collect-config and heat-config runs the deployments its server is
given; the simulated cloud stands in for such an image. For each ACTIVE server whose
user data carries Heat's software-config metadata (``user_data_format: SOFTWARE_CONFIG``:
a ``cfn-init-data`` part whose ``os-collect-config`` names the project and the server's stack
user), it runs one ``ember agent``, whose working folder (``<root>/<server id>``) stands for
that server's filesystem, and stops it once the server is no longer ACTIVE or is gone; an agent started
again for the same server finds its journal there and runs nothing twice.

These agents run templates' scripts on the machine that runs the simulator, so they run
only when enabled (``ember dev``, which listens on localhost only, enables them).

Given NATS, an agent listens for its pushed deployments and can answer NATS_SIGNAL. Under
authorization (``ember dev``'s embedded nats-server) it connects as its project's integration
user, read from the users file ``ember dev`` writes; an agent whose project has no user there
(not in ``EMBER_NATS_PROJECTS``, nor ``demo``) is given no NATS at all: it polls, and gives up a
NATS_SIGNAL at once saying so, rather than being refused by the server at each try.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import dataclasses
import datetime
import json
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import asyncpg

from libs.agent import credentials
from libs.messaging import server_auth
from libs.resources.mime import parts_of
from libs.simcloud.nova import store
from libs.telemetry import logs

log = logs.logger("simcloud.agents")
# How often the servers are looked at: an agent starts within this of its server going ACTIVE.
SWEEP_SECONDS = 1.0
# An agent asked to stop is killed after this.
STOP_SECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class AgentSettings:
    """Where the agents find Ember, where their servers' filesystems are, and how they poll."""

    api_url: str
    root: Path
    interval: float = 2.0
    run_timeout: float = 600.0
    nats_url: str | None = None
    nats_prefix: str | None = None
    # The users and passwords of an authorizing nats-server (libs/embedded/nats_auth's users file).
    nats_users: Path | None = None


@dataclasses.dataclass(frozen=True)
class Wanted:
    """A server that has an agent: which Ember project its deployments are in."""

    server_id: str
    project: str
    # The server's stack user (id, password), which its agent gets tokens as in keystone mode.
    stack_user: tuple[str, str] | None = dataclasses.field(default=None, repr=False)


def _collect_config(user_data: str | None) -> Mapping[str, Any] | None:
    """The ``os-collect-config`` section of the software-config metadata of a server's user data."""
    if not user_data:
        return None
    try:
        text = base64.b64decode(user_data, validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None
    for part in parts_of(text):
        if part.filename != "cfn-init-data":
            continue
        try:
            metadata = json.loads(part.payload)
        except ValueError:
            return None
        collect = metadata.get("os-collect-config") if isinstance(metadata, Mapping) else None
        return collect if isinstance(collect, Mapping) else None
    return None


def project_of(user_data: str | None) -> str | None:
    """The project of a server's deployments, from the software-config metadata of its user data;
    None for a server not booted for software config."""
    collect = _collect_config(user_data)
    for source in ("ember", "heat"):
        found = collect.get(source) if collect is not None else None
        if isinstance(found, Mapping) and found.get("project_id"):
            return str(found["project_id"])
    return None


def stack_user_of(user_data: str | None) -> tuple[str, str] | None:
    """The server's stack user (id, password), as its user data gives it to its agent."""
    collect = _collect_config(user_data)
    found = credentials.from_collect_config(json.dumps(collect).encode()) if collect is not None else {}
    if "user_id" in found and "password" in found:
        return found["user_id"], found["password"]
    return None


def wanted(servers: Iterable[tuple[str, str, str | None]]) -> dict[str, Wanted]:
    """Which of the (id, status, user data) servers have an agent now."""
    found: dict[str, Wanted] = {}
    for server_id, status, user_data in servers:
        project = project_of(user_data) if status == "ACTIVE" else None
        if project is not None:
            found[server_id] = Wanted(server_id, project, stack_user_of(user_data))
    return found


def argv(settings: AgentSettings, want: Wanted, *, nats: bool = True) -> list[str]:
    """The command of one server's agent (told of NATS unless ``nats`` is False)."""
    command = [sys.executable, "-m", "libs.cli", "agent", "--api-url", settings.api_url,
               "--project", want.project, "--server-id", want.server_id,
               "--workdir", str(settings.root / want.server_id), "--interval", f"{settings.interval:g}",
               "--timeout", f"{settings.run_timeout:g}"]
    if settings.nats_url and nats:
        command += ["--nats-url", settings.nats_url]
        if settings.nats_prefix:
            command += ["--nats-prefix", settings.nats_prefix]
    return command


def nats_login(users: Mapping[str, Any], project: str) -> dict[str, str] | None:
    """The variables that connect an agent of ``project`` as its integration user, from a users
    file's content; None when the project has none. Variables, not arguments: a command line is
    visible to every user of the machine."""
    found = users.get(server_auth.project_user(project))
    if not isinstance(found, Mapping) or not found.get("password"):
        return None
    return {"EMBER_AGENT_NATS_USER": str(found["user"]), "EMBER_AGENT_NATS_PASSWORD": str(found["password"])}


class Agents:
    """The agents running, kept in step with the servers by :meth:`sweep`."""

    def __init__(self, pool: asyncpg.Pool, settings: AgentSettings) -> None:
        self.pool = pool
        self.settings = settings
        self.running: dict[str, tuple[Wanted, asyncio.subprocess.Process]] = {}

    async def sweep(self) -> None:
        async with self.pool.acquire() as conn:
            rows = await store.for_agents(conn, datetime.datetime.now(datetime.UTC))
        want = wanted(rows)
        for server_id, (was, process) in list(self.running.items()):
            if want.get(server_id) != was or process.returncode is not None:
                await self._stop(server_id)
        for server_id, target in want.items():
            if server_id not in self.running:
                await self._start(target)

    async def run(self, stop: asyncio.Event) -> None:
        self.settings.root.mkdir(parents=True, exist_ok=True)
        self.settings.root.chmod(0o711)
        closed = closed_to_others(self.settings.root) if os.geteuid() == 0 else None
        if closed is not None:
            log.warning("agents: %s is closed to other users: the agents' runs (as nobody) cannot reach"
                        " their servers' folders under %s and will fail with status 126", closed,
                        self.settings.root)
        while not stop.is_set():
            try:
                await self.sweep()
            except (OSError, asyncpg.PostgresError) as exc:
                log.warning("agents: could not look at the servers: %s", exc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SWEEP_SECONDS)
        await self.close()

    async def close(self) -> None:
        for server_id in list(self.running):
            await self._stop(server_id)

    async def _start(self, want: Wanted) -> None:
        folder = self.settings.root / want.server_id
        folder.mkdir(parents=True, exist_ok=True)
        login = self._login(want.project)
        log_file = (folder.parent / f"{want.server_id}.log").open("ab")
        try:
            process = await asyncio.create_subprocess_exec(
                *argv(self.settings, want, nats=login is not None), stdin=asyncio.subprocess.DEVNULL,
                stdout=log_file, stderr=log_file, env={**environment_of(want), **(login or {})},
                start_new_session=True)
        finally:
            log_file.close()
        self.running[want.server_id] = (want, process)
        log.info("agents: started the agent of server %s (project %s, pid %d)", want.server_id, want.project,
                 process.pid)

    def _login(self, project: str) -> dict[str, str] | None:
        """NATS variables for an agent of ``project`` ({} with no authorization); None: no NATS for it."""
        if self.settings.nats_users is None:
            return {}
        try:
            users = json.loads(self.settings.nats_users.read_text())
        except (OSError, ValueError) as exc:
            log.warning("agents: cannot read the NATS users in %s: %s", self.settings.nats_users, exc)
            return None
        login = nats_login(users if isinstance(users, Mapping) else {}, project)
        if login is None:
            log.warning("agents: project %s has no NATS user (EMBER_NATS_PROJECTS): its agents poll only,"
                        " and cannot answer NATS_SIGNAL", project)
        return login

    async def _stop(self, server_id: str) -> None:
        _, process = self.running.pop(server_id)
        if process.returncode is None:
            # The agent alone: a run it started outlives it by design, as on a real server.
            process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), STOP_SECONDS)
            except TimeoutError:
                process.kill()
                await process.wait()
        log.info("agents: stopped the agent of server %s", server_id)


def closed_to_others(folder: Path) -> Path | None:
    """The first of ``folder`` and the folders above it that other users cannot pass through."""
    for each in (folder, *folder.parents):
        if each.exists() and not each.stat().st_mode & 0o001:
            return each
    return None


def environment_of(want: Wanted) -> dict[str, str]:
    # The agent's settings are its arguments: nothing of the simulator's own reaches it. Its stack
    # user is given as variables, which other users of the machine cannot read as they can argv.
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "PYTHONPATH", "EMBER_LOG_LEVEL", "EMBER_LOG_FORMAT")
    given = {k: v for k, v in os.environ.items() if k in keep}
    if want.stack_user is not None:
        given["EMBER_AGENT_USER_ID"], given["EMBER_AGENT_PASSWORD"] = want.stack_user
    return given


def settings_of(api_url: str | None, root: str | None, *, nats_url: str | None = None,
                nats_prefix: str | None = None, nats_users: str | None = None) -> AgentSettings | None:
    """The agents' settings from the simulator's options; None (no agents) unless both are given."""
    if not api_url or not root:
        return None
    return AgentSettings(api_url=api_url.rstrip("/"), root=Path(root), nats_url=nats_url or None,
                         nats_prefix=nats_prefix or None, nats_users=Path(nats_users) if nats_users else None)
