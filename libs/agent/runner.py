"""``python -m libs.agent.runner <run folder>``: one config's run, in a process that outlives the agent.

The agent starts a runner per run in a session of its own, so killing the
agent (or its process group) leaves the run going. The runner holds the
folder's lock for its whole life and decides under it, from the folder alone:
an outcome there already: nothing to do; ``started`` there and no outcome: a
runner before it began the run and died, so the run is reported interrupted,
never begun again; otherwise it writes ``started`` and runs the hook.

The hook's process runs as the unprivileged user when the runner is root (as
itself otherwise), in the run's own ``work/`` folder, in a session of its
own; past the time limit its whole process group gets SIGTERM, then SIGKILL.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import logging
import os
import pwd
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from libs.agent import atomic_files, configs, results
from libs.agent.configs import DerivedConfig
from libs.agent.hook_registry import Hooks
from libs.agent.hooks import Finished, Launch, Place
from libs.agent.run_folder import Outcome, RunFolder

log = logging.getLogger("ember.agent.runner")
# What a signal can carry (the API takes 1 MiB): the end of stdout and stderr, each output's start.
KEEP_BYTES = 1 << 20
KILL_GRACE_SECONDS = 5.0


@dataclasses.dataclass(frozen=True)
class Identity:
    uid: int
    gid: int
    name: str


def identity(user: str) -> Identity:
    """Who runs the hook: ``user`` when this process is root, else this process's own user."""
    entry = pwd.getpwnam(user) if os.geteuid() == 0 else pwd.getpwuid(os.geteuid())
    return Identity(entry.pw_uid, entry.pw_gid, entry.pw_name)


def _tail(path: Path) -> str:
    try:
        with path.open("rb") as source:
            size = source.seek(0, os.SEEK_END)
            source.seek(max(0, size - KEEP_BYTES))
            data = source.read()
    except FileNotFoundError:
        return ""
    text = data.decode("utf-8", "replace")
    return results.CUT_MARK + text if size > KEEP_BYTES else text


def read_outputs(prefix: Path | None, names: Sequence[str], owner: int) -> dict[str, str]:
    """Each declared output the run wrote, as ``<prefix>.<name>``.

    Only regular files of the run's user, never followed through a link: the
    runner may be root, and what it reads goes out in the signal.
    """
    found: dict[str, str] = {}
    for name in names if prefix is not None else ():
        if "/" in name or name in ("", ".", ".."):
            continue
        try:
            fd = os.open(f"{prefix}.{name}", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as source:
            info = os.fstat(source.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_uid == owner:
                found[name] = source.read(KEEP_BYTES).decode("utf-8", "replace")
    return found


def _private(path: Path) -> IO[bytes]:
    """A file only the runner reads: what a run prints may hold its inputs' secrets."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def _prepare_work(work: Path, launch: Launch, who: Identity) -> None:
    work.mkdir(mode=0o700, exist_ok=True)
    as_root = os.geteuid() == 0
    if as_root:
        os.chown(work, who.uid, who.gid)
    for item in launch.files:
        fd = os.open(item.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, item.mode)
        with os.fdopen(fd, "wb") as out:
            out.write(item.content)
        if as_root:
            os.chown(item.path, who.uid, who.gid)


def _stop_group(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the hook's whole process group, SIGKILL to what is left after a grace."""
    for sig, grace in ((signal.SIGTERM, KILL_GRACE_SECONDS), (signal.SIGKILL, None)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            continue


def _run(launch: Launch, place: Place, who: Identity, outs: tuple[IO[bytes], IO[bytes]],
         timeout: float) -> tuple[int, bool, str | None]:
    """(exit code, killed at the time limit, why it could not start)."""
    ids: dict[str, Any] = ({"user": who.uid, "group": who.gid, "extra_groups": []}
                           if os.geteuid() == 0 else {})
    try:
        process = subprocess.Popen(launch.argv, cwd=place.work, env=dict(launch.env),
                                   stdin=subprocess.PIPE if launch.stdin else subprocess.DEVNULL,
                                   stdout=outs[0], stderr=outs[1], start_new_session=True, **ids)
    except OSError as exc:
        return -1, False, (f"could not start {launch.argv[0]} as {who.name}: {exc.strerror or exc}"
                           " (its first line must be a #! line, and every folder above the agent's"
                           " must let that user through)")
    try:
        process.communicate(launch.stdin or None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _stop_group(process)
        return process.returncode, True, None
    return process.returncode, False, None


def execute(config: DerivedConfig, folder: RunFolder, timeout: float, user: str,
            hooks_dir: Path | None) -> Outcome:
    started_at = time.time()
    hook = Hooks(hooks_dir).find(config.group)
    if hook is None:
        missing = f"no hook for group {config.group!r}"
        return Outcome(results.not_started("", missing), started_at, time.time())
    who = identity(user)
    place = Place(work=folder.work, user=who.name)
    launch = hook.launch(config, place)
    _prepare_work(folder.work, launch, who)
    code, timed_out, problem = 0, False, None  # an empty launch: nothing to run, nothing wrong
    if launch.argv:
        with _private(folder.stdout) as out, _private(folder.stderr) as err:
            code, timed_out, problem = _run(launch, place, who, (out, err), timeout)
    stdout, stderr = _tail(folder.stdout), _tail(folder.stderr)
    if problem is not None:
        return Outcome(results.not_started(stderr, problem), started_at, time.time())
    outputs = read_outputs(launch.outputs_prefix, config.outputs, who.uid)
    result = hook.result(config, Finished(code, stdout, stderr, outputs))
    if timed_out:
        result = results.timed_out(result, timeout)
    return Outcome(result, started_at, time.time(), timed_out)


def run(folder: RunFolder, timeout: float, user: str, hooks_dir: Path | None) -> None:
    lock = os.open(folder.lock, os.O_RDWR | os.O_CREAT, 0o600)
    # Held until this process ends, however it ends: the kernel lets go of a dead process's lock.
    fcntl.flock(lock, fcntl.LOCK_EX)
    if folder.outcome() is not None:
        return
    now = time.time()
    if folder.started.exists():
        log.warning("the run began under an earlier runner and did not end; reported interrupted")
        said = results.interrupted(_tail(folder.stdout), _tail(folder.stderr))
        folder.write_outcome(Outcome(said, now, now))
        return
    config = configs.parse(atomic_files.read_json(folder.config))
    if isinstance(config, configs.Refused):
        folder.write_outcome(Outcome(results.not_started("", config.reason), now, now))
        return
    atomic_files.write_json(folder.started, {"pid": os.getpid(), "at": now})
    outcome = execute(config, folder, timeout, user, hooks_dir)
    folder.write_outcome(outcome)
    log.info("run ended with status %s in %.2f s", outcome.status_code,
             outcome.finished_at - outcome.started_at)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m libs.agent.runner")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--hooks-dir", type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s runner %(process)d: %(message)s")
    run(RunFolder(args.folder), args.timeout, args.user, args.hooks_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
