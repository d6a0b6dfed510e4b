"""Helpers shared by the integration tests: URLs, polling with a deadline, processes."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit, urlunsplit

from libs.embedded.process import scratch_dir

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Servers:
    admin_db_url: str
    nats_url: str
    embedded: bool
    scratch: Path


@contextlib.contextmanager
def scratch(prefix: str) -> Iterator[Path]:
    """A temporary directory for embedded servers and their logs, removed after the block.

    Not pytest's ``tmp_path``: that is 0700 (see :func:`libs.embedded.process.scratch_dir`).
    """
    base = scratch_dir(prefix)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def database_url_for(admin_url: str, name: str) -> str:
    parts = urlsplit(admin_url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


async def eventually(probe: Callable[[], Awaitable[T | None]], *, timeout: float = 20.0,
                     interval: float = 0.05, what: str = "condition") -> T:
    """Poll ``probe`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = await probe()
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def wait_until(probe: Callable[[], T | None], *, timeout: float = 20.0, interval: float = 0.05,
               what: str = "condition") -> T:
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def ember(args: list[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``ember <args>`` as a real process (the console script's module)."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")}
    full_env.update(env)
    log = log_path.open("ab")
    return subprocess.Popen([sys.executable, "-m", "libs.cli", *args], env=full_env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)


def terminate(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"pid {proc.pid} did not stop within {timeout}s of SIGTERM") from None


def live_pids_mentioning(needle: str) -> list[int]:
    """Processes (not zombies) whose command line or environment mentions ``needle``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] == "Z":
                continue
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except (OSError, IndexError):
            continue
        if needle.encode() in blob:
            found.append(int(entry.name))
    return found


def wait_all_gone(needle: str, *, timeout: float, what: str) -> None:
    """Wait until no live process mentions ``needle``; a timeout names those still there."""
    deadline = time.monotonic() + timeout
    while (left := survivors_mentioning(needle)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        raise AssertionError(f"timed out after {timeout}s waiting for {what}; still running: {left}")


def survivors_mentioning(needle: str) -> list[str]:
    """``pid: command line`` of each live process mentioning ``needle``."""
    shown = []
    for pid in live_pids_mentioning(needle):
        try:
            argv = (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        shown.append(f"{pid}: {argv.decode(errors='replace').strip()[:200]}")
    return shown
