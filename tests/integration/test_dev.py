"""`ember dev`: embedded servers and five services, state kept across restarts, nothing left behind."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import asyncpg
import nats
import nats.errors
import pytest
from nats.aio.client import Client

from libs.embedded.process import free_port
from libs.messaging.subjects import SERVICES
from tests.support import Servers, ember, terminate, wait_all_gone, wait_until

pytestmark = pytest.mark.slow


def _health(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(url + "/ember/v1/health", timeout=5) as response:
            body: dict[str, Any] = json.load(response)
            return body
    except (urllib.error.URLError, OSError):
        return None


def _healthy(url: str) -> dict[str, Any] | None:
    body = _health(url)
    return body if body and body["status"] == "ok" else None


def _dev_env(data_dir: Path, port: int, **extra: str) -> dict[str, str]:
    return {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{port}",
            "EMBER_SHUTDOWN_GRACE": "5", "EMBER_REPORT_INTERVAL": "1", **extra}


def _urls(data_dir: Path) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in (data_dir / "dev.env").read_text().splitlines())
    return dict(pairs)


async def _nats(urls: dict[str, str]) -> Client:
    """dev.env's operator user: the embedded nats-server admits no anonymous client."""
    return await nats.connect(urls["EMBER_NATS_URL"], user=urls["EMBER_NATS_USER"],
                              password=urls["EMBER_NATS_PASSWORD"])


async def _anonymous_refused(urls: dict[str, str]) -> bool:
    try:
        await nats.connect(urls["EMBER_NATS_URL"], allow_reconnect=False)
    except nats.errors.Error as exc:
        return "Authorization Violation" in str(exc)
    return False


async def _write_state(urls: dict[str, str]) -> None:
    conn = await asyncpg.connect(urls["EMBER_DATABASE_URL"])
    try:
        await conn.execute("CREATE TABLE kept (note text)")
        await conn.execute("INSERT INTO kept VALUES ('survives a restart')")
    finally:
        await conn.close()
    nc = await _nats(urls)
    try:
        await nc.jetstream().publish("ember.events.demo.kept", b'{"kind": "note", "v": 1}')
    finally:
        await nc.close()


async def _read_state(urls: dict[str, str]) -> tuple[str, int]:
    conn = await asyncpg.connect(urls["EMBER_DATABASE_URL"])
    try:
        note = await conn.fetchval("SELECT note FROM kept")
    finally:
        await conn.close()
    nc = await _nats(urls)
    try:
        info = await nc.jetstream().stream_info("EMBER_EVENTS")
    finally:
        await nc.close()
    return note, info.state.messages


def test_dev_runs_everything_keeps_state_and_leaves_nothing(data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = _dev_env(data_dir, port)

    first = ember(["dev"], env, tmp_path / "dev-1.log")
    try:
        health = wait_until(lambda: _healthy(url), timeout=90, interval=0.3, what="ember dev healthy")
        assert {s: len(v) for s, v in health["services"].items()} == dict.fromkeys(SERVICES, 1)
        with pytest.raises(urllib.error.HTTPError) as root:
            urllib.request.urlopen(url + "/", timeout=5)
        assert root.value.code == 300  # Heat's versions document
        asyncio.run(_write_state(_urls(data_dir)))
        assert asyncio.run(_anonymous_refused(_urls(data_dir)))
        assert (data_dir / "dev.env").stat().st_mode & 0o077 == 0  # it holds a password
    finally:
        assert terminate(first) == 0
    wait_all_gone(str(data_dir), timeout=15, what="no process of the first run")
    assert "Ember is running." in (tmp_path / "dev-1.log").read_text()

    # A second start finds its data again (new ports, same folders).
    second = ember(["dev"], env, tmp_path / "dev-2.log")
    try:
        wait_until(lambda: _healthy(url), timeout=90, interval=0.3, what="ember dev healthy again")
        note, messages = asyncio.run(_read_state(_urls(data_dir)))
        assert note == "survives a restart"
        assert messages >= 1
        # A crashed service is restarted by dev: the design's "short delay".
        current = _health(url)
        assert current is not None
        victim = current["services"]["worker"][0]["pid"]
        os.kill(victim, signal.SIGKILL)
        restarted = wait_until(
            lambda: (h := _healthy(url)) and h["services"]["worker"][0]["pid"] != victim and h,
            timeout=30, interval=0.3, what="the worker restarted")
        assert restarted["services"]["worker"][0]["pid"] != victim
    finally:
        # The parent dying (kill -9) takes every child with it.
        second.kill()
        second.wait()
    wait_all_gone(str(data_dir), timeout=20, what="no process after kill -9 of dev")

    # And it starts after that crash too, with its data.
    third = ember(["dev"], env, tmp_path / "dev-3.log")
    try:
        wait_until(lambda: _healthy(url), timeout=90, interval=0.3, what="ember dev healthy after a crash")
        assert asyncio.run(_read_state(_urls(data_dir)))[0] == "survives a restart"
    finally:
        assert terminate(third) == 0
    wait_all_gone(str(data_dir), timeout=15, what="no process of the third run")


@pytest.mark.slow_ci  # 8 s; test.sh keeps ember dev's whole run
def test_dev_uses_given_servers_instead_of_embedded(data_dir: Path, tmp_path: Path, servers: Servers,
                                                    database_url: str, nats_prefix: str) -> None:
    port = free_port()
    env = _dev_env(data_dir, port, EMBER_DATABASE_URL=database_url, EMBER_NATS_URL=servers.nats_url,
                   EMBER_NATS_PREFIX=nats_prefix)
    proc = ember(["dev"], env, tmp_path / "dev.log")
    try:
        health = wait_until(lambda: _healthy(f"http://127.0.0.1:{port}"), timeout=60, interval=0.3,
                            what="ember dev healthy on the given servers")
        assert health["queues"]["work"]["ok"]
        assert _urls(data_dir) == {"EMBER_DATABASE_URL": database_url, "EMBER_NATS_URL": servers.nats_url}
        assert not (data_dir / "postgres").exists() and not (data_dir / "nats").exists()
    finally:
        assert terminate(proc) == 0


@pytest.mark.slow_ci  # 8 s; test.sh keeps ember dev's whole run
def test_a_second_dev_on_the_same_data_dir_is_refused(data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    first = ember(["dev"], _dev_env(data_dir, port), tmp_path / "dev-1.log")
    try:
        # dev.env is written once the servers run, long after the lock is taken.
        wait_until((data_dir / "dev.env").exists, timeout=60, what="the first dev's servers")
        second = subprocess.run([sys.executable, "-m", "libs.cli", "dev"],
                                env={**os.environ, **_dev_env(data_dir, free_port())},
                                capture_output=True, text=True, timeout=60, check=False)
        assert second.returncode == 1
        assert "already running" in second.stderr
    finally:
        assert terminate(first) == 0

