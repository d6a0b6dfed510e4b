"""``ember dev``: everything on one machine, nothing installed but this package.

Starts an embedded PostgreSQL and nats-server under ``EMBER_DATA_DIR`` (unless
``EMBER_DATABASE_URL`` / ``EMBER_NATS_URL`` point at running servers), applies
migrations, then runs the five services as child processes and restarts any
that dies. Unless a cloud is configured (``OS_CLOUD`` and
``OS_CLIENT_CONFIG_FILE``), the simulated OpenStack runs as one more child and
its ``clouds.yaml`` is written in the data directory (libs/simcloud/dev_cloud.py).
Ctrl-C, SIGTERM or the death of this process stops everything: services first
(they drain), then NATS, then PostgreSQL.

A dead embedded server is restarted too, on its port and data directory: the
database and JetStream keep their state, and the services, which ride out the
outage, reconnect to the URLs they were given.
"""

from __future__ import annotations

import asyncio
import dataclasses
import fcntl
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import IO

from libs import lifecycle, restart_backoff
from libs.config import Settings
from libs.db import migrate
from libs.embedded import nats_auth, process
from libs.embedded.nats import EmbeddedNats
from libs.embedded.postgres import EmbeddedPostgres
from libs.messaging.subjects import SERVICES, Names
from libs.simcloud import dev_cloud
from libs.telemetry import logs

log = logs.logger("dev")
# The project the banner's example uses (noauth: the path's project id).
DEMO_PROJECT = "demo"

Server = EmbeddedPostgres | EmbeddedNats


@dataclasses.dataclass
class Child:
    service: str
    proc: subprocess.Popen[bytes] | None = None
    crashes: int = 0
    started_at: float = 0.0
    next_start: float = 0.0
    argv: tuple[str, ...] = ()  # the `ember` arguments; (service,) when empty


@dataclasses.dataclass
class ServerChild:
    """An embedded server dev started, and restarts should it die."""

    name: str
    server: Server
    crashes: int = 0
    started_at: float = dataclasses.field(default_factory=time.monotonic)
    next_start: float | None = None  # set while it is dead and waits for its delay


def _cloud_lines(cloud: dev_cloud.DevCloud | None) -> str:
    if cloud is None:
        return f"  cloud:     {os.environ.get('OS_CLOUD')} from {os.environ.get('OS_CLIENT_CONFIG_FILE')}\n"
    return (f"  cloud:     simulated OpenStack at {cloud.url}/identity (chaos API: {cloud.url}/chaos)\n"
            f"             export OS_CLIENT_CONFIG_FILE={cloud.clouds_yaml} OS_CLOUD={dev_cloud.CLOUD}"
            f"   (admin: {dev_cloud.ADMIN_CLOUD})\n")


def _banner(settings: Settings, db_url: str, nats_url: str, cloud: dev_cloud.DevCloud | None = None) -> str:
    api = settings.api_url
    return f"""
Ember is running.
  API:       {api}   (Heat Orchestration API v1 at {api}/v1/<project>)
  health:    {api}/ember/v1/health
  postgres:  {db_url}
  nats:      {nats_url}
  data:      {settings.data_dir}   (logs and spans in {settings.data_dir / 'logs'})
{_cloud_lines(cloud)}
{_try_it(settings)}
Ctrl-C stops everything.
"""


def _try_it(settings: Settings) -> str:
    api = settings.api_url
    if settings.api.auth == "keystone":
        return (f"Try it (keystone: a user of {settings.api.auth_config}):\n"
                f"  openstack --os-auth-url {api}/identity/v3 \\\n"
                "      --os-username <user> --os-password <password> --os-project-name <project> \\\n"
                "      --os-user-domain-name Default --os-project-domain-name Default \\\n"
                "      stack create --wait -t template.yaml mystack\n")
    return ("Try it (noauth: the project is the path's project id):\n"
            f"  openstack --os-auth-type none --os-endpoint {api}/v1/{DEMO_PROJECT} \\\n"
            "      stack create --wait -t template.yaml mystack\n")


def _lock_data_dir(data_dir: Path) -> IO[str]:
    data_dir.mkdir(parents=True, exist_ok=True)
    handle = (data_dir / "dev.lock").open("w")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"ember dev: another `ember dev` is already running on {data_dir}", file=sys.stderr)
        raise SystemExit(1) from None
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def _api_answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/", timeout=1) as response:
            return bool(response.status)
    except urllib.error.HTTPError:
        return True  # any HTTP answer, 300 included, means it serves
    except OSError:
        return False


class Supervisor:
    def __init__(self, settings: Settings, env: dict[str, str], stop: threading.Event,
                 servers: list[ServerChild], service_env: dict[str, dict[str, str]] | None = None) -> None:
        self.settings = settings
        self.env = env
        # Each service's own variables (its NATS user), over the shared ones.
        self.service_env = service_env or {}
        self.stop = stop
        self.servers = servers
        self.children = [Child(s) for s in SERVICES]
        self.log_dir = settings.data_dir / "logs"

    def start(self, child: Child) -> None:
        child.started_at = time.monotonic()
        child.proc = process.spawn(
            [sys.executable, "-m", "libs.cli", *(child.argv or (child.service,))],
            # Structured logs to the terminal; console spans (stdout) to a file.
            log_path=self.log_dir / f"{child.service}.spans", stderr_to_parent=True,
            env={**self.env, **self.service_env.get(child.service, {})},
        )

    def watch(self) -> None:
        while not self.stop.wait(0.2):
            for server in self.servers:
                self._keep_server(server)
            now = time.monotonic()
            for child in self.children:
                if child.proc is None:
                    if now >= child.next_start:
                        self.start(child)
                    continue
                code = child.proc.poll()
                if code is None:
                    continue
                # A crashed process costs a short delay, as the design promises.
                restart = restart_backoff.after_exit(child.crashes, now - child.started_at)
                log.warning("%s exited with %s; restarting in %.1fs", child.service, code, restart.delay)
                child.proc = None
                child.crashes = restart.crashes
                child.next_start = now + restart.delay

    def _keep_server(self, child: ServerChild) -> None:
        """Start a dead server again, on the same port and data directory, once its delay is over.

        Blocks until it accepts connections: the services cannot work without it anyway.
        """
        now = time.monotonic()
        if child.next_start is None:
            code = child.server.poll()
            if code is None:
                return
            restart = restart_backoff.after_exit(child.crashes, now - child.started_at)
            log.warning("%s exited with %s; restarting in %.1fs", child.name, code, restart.delay)
            child.crashes = restart.crashes
            child.next_start = now + restart.delay
        if now < child.next_start:
            return
        child.started_at = now
        try:
            child.server.start()
        except (process.EmbeddedServerError, OSError) as exc:
            child.next_start = None  # poll() reports the failed start; its delay grows
            log.error("%s did not start again: %s", child.name, exc)
            return
        child.next_start = None
        log.info("%s restarted", child.name)

    def stop_all(self) -> None:
        running = [c.proc for c in self.children if c.proc is not None and c.proc.poll() is None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.settings.shutdown_grace + 5
        for proc in running:
            try:
                proc.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def _prepare_database(url: str) -> None:
    await migrate.ensure_database(url)
    await migrate.migrate_url(url)


def _nats(settings: Settings, servers: list[ServerChild]
          ) -> tuple[str, dict[str, dict[str, str]], dict[str, str]]:
    """The server's URL, each service's NATS variables and the operator's (none for a given server)."""
    if settings.nats_url:
        return settings.nats_url, {}, {}
    # Fresh passwords each start: only this run's children (and dev.env's reader) know them. The
    # demo project (the banner's) has a user too: the simulated servers' agents connect as it.
    projects = tuple(dict.fromkeys((*settings.nats_projects, DEMO_PROJECT)))
    auth = nats_auth.write(settings.data_dir / "nats-auth", Names(settings.nats_prefix), projects)
    ns = EmbeddedNats(settings.data_dir / "nats", config=auth.config)
    servers.append(ServerChild("nats-server", ns))
    url = ns.start()
    return url, {s: auth.service(s).env() for s in SERVICES}, auth.admin.env()


def _write_dev_env(data_dir: Path, values: dict[str, str]) -> None:
    # Written whole (rename), so a reader never sees half a file; the owner's only (a password).
    staging = data_dir / "dev.env.tmp"
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.writelines(f"{k}={v}\n" for k, v in values.items())
    staging.replace(data_dir / "dev.env")


def main() -> int:
    settings = lifecycle.load_settings_or_exit()
    logs.configure("dev", settings.hostname, settings.log_level, settings.log_format)
    lock = _lock_data_dir(settings.data_dir)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())

    servers: list[ServerChild] = []
    supervisor: Supervisor | None = None
    try:
        db_url = settings.database_url
        if not db_url:
            pg = EmbeddedPostgres(settings.data_dir / "postgres")
            servers.append(ServerChild("postgresql", pg))
            db_url = pg.start()
        nats_url, service_env, admin = _nats(settings, servers)
        asyncio.run(_prepare_database(db_url))
        _write_dev_env(settings.data_dir, {"EMBER_DATABASE_URL": db_url, "EMBER_NATS_URL": nats_url, **admin})

        env = dict(os.environ)
        env.update({"EMBER_DATABASE_URL": db_url, "EMBER_NATS_URL": nats_url,
                    "EMBER_DATA_DIR": str(settings.data_dir)})
        env.setdefault("EMBER_OTEL_EXPORTER", "otlp" if settings.telemetry.otlp_endpoint else "console")
        # No cloud configured: the simulator is Ember's cloud, one more child on the same database.
        cloud = None if dev_cloud.configured(os.environ) else dev_cloud.plan(settings.data_dir, os.environ)
        if cloud is not None:
            dev_cloud.write(cloud)
            env.update(cloud.env())
        supervisor = Supervisor(settings, env, stop, servers, service_env)
        if cloud is not None:
            users = settings.data_dir / "nats-auth" / nats_auth.USERS_NAME
            agents = dev_cloud.DevAgents(settings.api_url, settings.data_dir / "servers", nats_url=nats_url,
                                         nats_prefix=settings.nats_prefix, nats_users=users if admin else None
                                         ) if settings.dev_agents else None
            supervisor.children.insert(0, Child("simcloud", argv=tuple(cloud.argv(db_url, agents))))
        for child in supervisor.children:
            supervisor.start(child)
        deadline = time.monotonic() + 60
        while not stop.is_set() and not (_api_answers(settings.api_url)
                                         and (cloud is None or _api_answers(cloud.url))):
            if time.monotonic() > deadline:
                log.error("the api did not answer on %s within 60s", settings.api_url)
                return 1
            stop.wait(0.2)
        if not stop.is_set():
            users = settings.data_dir / "nats-auth" / nats_auth.USERS_NAME
            shown = f"{nats_url}   (users and passwords: {users})" if admin else nats_url
            print(_banner(settings, db_url, shown, cloud), file=sys.stderr, flush=True)
            supervisor.watch()
        return 0
    except process.EmbeddedServerError as exc:
        print(f"ember dev: {exc}", file=sys.stderr)
        return 1
    finally:
        if supervisor is not None:
            supervisor.stop_all()
        for kept in reversed(servers):
            kept.server.stop()
        lock.close()
