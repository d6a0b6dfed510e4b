"""Child processes of the embedded servers: spawn, wait until listening, stop.

Plain blocking ``subprocess`` on purpose: the async callers run the waits in
``asyncio.to_thread``.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import grp
import os
import pwd
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

_PR_SET_PDEATHSIG = 1
_NOBODY_USER = "nobody"
_NOBODY_GROUPS = ("nogroup", "nobody")
_LOG_TAIL_LINES = 20

# Loaded before any fork: the preexec hook must not dlopen in the child.
_libc = ctypes.CDLL(None, use_errno=True)

# The kernel sends the death signal when the *thread* that forked the child
# exits, not the process. Callers fork from asyncio.to_thread workers, which die
# with their event loop (every test has one), so every fork goes through this one
# thread that lives as long as the process (the executor starts it on first use).
_SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ember-spawn")


class EmbeddedServerError(RuntimeError):
    """An embedded server did not start; the message carries the end of its log."""


def scratch_dir(prefix: str) -> Path:
    """A new temporary directory the embedded servers can work in (the caller removes it).

    Open to all (0755), not mkdtemp's 0700: as root, PostgreSQL runs as nobody and must reach it.
    """
    base = Path(tempfile.mkdtemp(prefix=prefix))
    base.chmod(0o755)
    return base


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (another process may still take it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def nobody_ids() -> tuple[int, int]:
    """The uid and gid of ``nobody``, the unprivileged user for servers that refuse root."""
    uid = pwd.getpwnam(_NOBODY_USER).pw_uid
    for name in _NOBODY_GROUPS:
        try:
            return uid, grp.getgrnam(name).gr_gid
        except KeyError:
            continue
    raise EmbeddedServerError(f"no group named one of {_NOBODY_GROUPS} for user {_NOBODY_USER}")


def _death_signal_hook(sig: signal.Signals) -> Callable[[], None]:
    parent = os.getpid()

    def hook() -> None:
        # Runs in the child after setuid: a credential change clears the death
        # signal, so it must be set here rather than before.
        _libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        # The parent may have died between fork and prctl; nobody would signal us then.
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return hook


def _popen(argv: Sequence[str], *, log_path: Path, env: Mapping[str, str] | None,
           run_as_nobody: bool, cwd: Path | None, death_signal: signal.Signals,
           stderr_to_parent: bool) -> subprocess.Popen[bytes]:
    user: int | None = None
    group: int | None = None
    extra_groups: list[int] | None = None
    if run_as_nobody:
        user, group = nobody_ids()
        # Otherwise the child keeps root's supplementary groups.
        extra_groups = []
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as log:
        return subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=log,
            stderr=None if stderr_to_parent else subprocess.STDOUT,
            env=dict(env) if env is not None else None, cwd=cwd,
            # Its own session, so a terminal's Ctrl-C reaches only the supervisor,
            # which then stops the servers in order.
            start_new_session=True,
            user=user, group=group, extra_groups=extra_groups,
            # Safe despite threads: the hook only makes three system calls.
            preexec_fn=_death_signal_hook(death_signal),  # noqa: PLW1509
        )


def spawn(argv: Sequence[str], *, log_path: Path, env: Mapping[str, str] | None = None,
          run_as_nobody: bool = False, cwd: Path | None = None,
          death_signal: signal.Signals = signal.SIGTERM,
          stderr_to_parent: bool = False) -> subprocess.Popen[bytes]:
    """Start ``argv`` with stdout (and stderr, unless ``stderr_to_parent``) appended to ``log_path``.

    The child receives ``death_signal`` when this process dies, however it dies.
    """
    return _SPAWNER.submit(_popen, argv, log_path=log_path, env=env, run_as_nobody=run_as_nobody,
                           cwd=cwd, death_signal=death_signal,
                           stderr_to_parent=stderr_to_parent).result()


def log_tail(log_path: Path | None, lines: int = _LOG_TAIL_LINES) -> str:
    if log_path is None:
        return ""
    try:
        text = log_path.read_text(errors="replace")
    except OSError as exc:
        return f"(cannot read {log_path}: {exc})"
    return "\n".join(text.splitlines()[-lines:])


def startup_error(what: str, log_path: Path | None) -> EmbeddedServerError:
    tail = log_tail(log_path)
    where = f"; last lines of {log_path}:\n{tail}" if log_path is not None else ""
    return EmbeddedServerError(f"{what}{where}")


def check_running(proc: subprocess.Popen[bytes] | None, log_path: Path | None) -> None:
    """Raise with the log's tail if ``proc`` has already exited."""
    if proc is not None and proc.poll() is not None:
        program = Path(str(proc.args[0] if isinstance(proc.args, list) else proc.args)).name
        raise startup_error(f"{program} (pid {proc.pid}) exited with status {proc.returncode}",
                            log_path)


def _accepts(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def ensure_port_free(host: str, port: int) -> None:
    """Refuse a port that already accepts: :func:`wait_for_port` would take it for the new server."""
    if _accepts(host, port):
        raise EmbeddedServerError(f"something already listens on {host}:{port}")


def wait_for_port(host: str, port: int, *, timeout: float,
                  proc: subprocess.Popen[bytes] | None = None,
                  log_path: Path | None = None) -> None:
    """Block until ``host:port`` accepts TCP connections, ``proc`` exits or time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        check_running(proc, log_path)
        if _accepts(host, port):
            return
        if time.monotonic() >= deadline:
            raise startup_error(f"nothing accepted connections on {host}:{port} within "
                                f"{timeout:g}s", log_path)
        time.sleep(0.05)


def stop(proc: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGTERM,
         timeout: float = 10.0) -> None:
    """Ask ``proc`` to exit with ``sig``, then kill it after ``timeout``; safe to repeat."""
    if proc.poll() is None:
        try:
            proc.send_signal(sig)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
    # Reaps the child whichever way it ended, so no zombie is left behind.
    proc.wait()


def can_access_as_nobody(path: Path) -> bool:
    """Whether ``nobody`` can read ``path`` (and enter or run it, if it is a folder or program).

    Only root can ask: switching to ``nobody`` needs the privilege.
    """
    # Asking the kernel as nobody answers for every folder on the way and for
    # ACLs, which reading mode bits here would not.
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    tests = ["-r", str(path)]
    if path.is_dir() or mode & 0o111:
        tests += ["-a", "-x", str(path)]
    uid, gid = nobody_ids()
    result = subprocess.run(["test", *tests], user=uid, group=gid, extra_groups=[],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, check=False)
    return result.returncode == 0
