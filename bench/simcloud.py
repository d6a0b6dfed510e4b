"""The simulated OpenStack under load, measured by hand: ``python -m bench.simcloud --help``.

Starts an embedded PostgreSQL (or uses ``EMBER_DATABASE_URL``'s server, in a
fresh database dropped at the end) and ``ember simcloud`` as a real process,
then through the real openstacksdk, from ``--threads`` threads with a
connection each: creates ``--servers`` servers on one network (a /16 made for
the run, so addresses are allocated), waits for all to be ACTIVE, lists them
all (detail, paged by 1000), shows each of ``--shows`` once, deletes them all.
Prints each phase's time and calls per second, and the simulator's peak RSS.
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import openstack
import requests
from openstack.connection import Connection

from libs.db.pool import create_pool
from libs.embedded import process
from libs.embedded.postgres import EmbeddedPostgres
from libs.simcloud import migrate, seeds


def _database_url(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


async def _admin(url: str, statement: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


async def _bench_network(url: str) -> str:
    """A /16 network in the demo project (schema and seeds made first), for the servers' ports."""
    async with create_pool(url, min_size=1, max_size=1) as pool, pool.acquire() as conn:
        await migrate.migrate(conn)
        await seeds.seed(conn, seeds.Credentials())
        project = await conn.fetchval("SELECT id FROM simcloud.projects WHERE name = 'demo'")
        network_id = str(uuid.uuid4())
        await conn.execute("INSERT INTO simcloud.networks (id, project_id, name)"
                           " VALUES ($1, $2, 'bench-net')", network_id, project)
        await conn.execute(
            "INSERT INTO simcloud.subnets (id, project_id, network_id, name, cidr, gateway_ip) VALUES"
            " ($1, $2, $3, 'bench-subnet', '10.128.0.0/16', '10.128.0.1')",
            str(uuid.uuid4()), project, network_id)
        return network_id


def _peak_rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class Clients:
    """One openstacksdk connection per thread (as the worker holds one per cloud and project)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.local = threading.local()

    def get(self) -> Connection:
        conn: Connection | None = getattr(self.local, "conn", None)
        if conn is None:
            conn = openstack.connect(auth_url=f"{self.url}/identity", username="demo", password="demo",
                                     project_name="demo", user_domain_name="Default",
                                     project_domain_name="Default", region_name="RegionOne")
            self.local.conn = conn
        return conn


def _phase(name: str, count: int, run: Callable[[], Any]) -> Any:
    started = time.perf_counter()
    result = run()
    elapsed = time.perf_counter() - started
    rate = count / elapsed if elapsed > 0 else float("inf")
    print(f"{name:<12} {count:>7} in {elapsed:8.2f} s   {rate:9.1f}/s", flush=True)
    return result


def _wait_active(clients: Clients, total: int, deadline: float) -> int:
    conn = clients.get()
    while time.monotonic() < deadline:
        active = sum(1 for _ in conn.compute.servers(details=False, status="ACTIVE", name="^bench-"))
        if active >= total:
            return active
        time.sleep(0.5)
    raise SystemExit("servers did not all become ACTIVE in time")


def _raw_pages(conn: Connection) -> int:
    url: str | None = f"{conn.compute.get_endpoint()}/servers/detail"
    seen = 0
    with requests.Session() as session:
        session.headers["X-Auth-Token"] = str(conn.auth_token)
        while url:
            body = session.get(url, timeout=60).json()
            seen += len(body["servers"])
            links = body.get("servers_links", [])
            url = next((link["href"] for link in links if link["rel"] == "next"), None)
    return seen


def run(args: argparse.Namespace, admin_url: str, scratch: Path) -> None:
    name = f"simcloud_bench_{uuid.uuid4().hex[:8]}"
    url = _database_url(admin_url, name)
    asyncio.run(_admin(admin_url, f'CREATE DATABASE "{name}"'))
    try:
        network_id = asyncio.run(_bench_network(url))
        port = process.free_port()
        log = (scratch / "simcloud.log").open("ab")
        sim = subprocess.Popen([sys.executable, "-m", "libs.cli", "simcloud", "--bind", f"127.0.0.1:{port}",
                                "--database-url", url, "--boot-seconds", str(args.boot_seconds)],
                               stdout=log, stderr=subprocess.STDOUT,
                               env={**os.environ, "EMBER_LOG_LEVEL": "WARNING"})
        try:
            clients = Clients(f"http://127.0.0.1:{port}")
            _serve(args, clients, network_id, sim.pid)
        finally:
            sim.terminate()
            sim.wait(30)
    finally:
        asyncio.run(_admin(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _serve(args: argparse.Namespace, clients: Clients, network_id: str, pid: int) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            flavor = clients.get().compute.find_flavor("m1.tiny", ignore_missing=False)
            break
        except Exception:  # not answering yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
    image = clients.get().image.find_image("cirros", ignore_missing=False)
    total = args.servers
    print(f"simcloud bench: {total} servers, {args.threads} threads, boot {args.boot_seconds} s", flush=True)

    def create(index: int) -> str:
        server = clients.get().compute.create_server(
            name=f"bench-{index:05d}", flavor_id=flavor.id, image_id=image.id,
            networks=[{"uuid": network_id}], metadata={"ember_resource": f"ember-{index}"})
        return str(server.id)

    def show(server_id: str) -> Any:
        return clients.get().compute.get_server(server_id)

    def delete(server_id: str) -> None:
        clients.get().compute.delete_server(server_id)

    with ThreadPoolExecutor(args.threads) as pool:
        ids: list[str] = _phase("create", total, lambda: list(pool.map(create, range(total))))
        _phase("all ACTIVE", total, lambda: _wait_active(clients, total, time.monotonic() + 600))
        listed = _phase("list detail", total, lambda: list(clients.get().compute.servers(details=True)))
        assert len(listed) >= total
        # The same pages as raw JSON: the simulator's share of the above (the rest is openstacksdk's parsing).
        _phase("list raw", total, lambda: _raw_pages(clients.get()))
        shows = ids[:args.shows]
        _phase("show", len(shows), lambda: list(pool.map(show, shows)))
        _phase("delete", total, lambda: list(pool.map(delete, ids)))
    rss = _peak_rss_mb(pid)
    print(f"simcloud peak RSS: {f'{rss:.0f} MiB' if rss is not None else 'unknown'}", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.simcloud", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=10_000)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--shows", type=int, default=1000)
    parser.add_argument("--boot-seconds", type=float, default=1.0)
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="simcloud-bench-"))
    scratch.chmod(0o755)
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, scratch, True)
        admin_url = os.environ.get("EMBER_DATABASE_URL", "").strip()
        if not admin_url:
            pg = EmbeddedPostgres(scratch / "postgres", fsync=False)
            stack.callback(pg.stop)
            admin_url = pg.start()
        run(args, admin_url, scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
