"""One run's folder, ``<workdir>/runs/<hash>``: what a run needs, what it left, and who holds it.

- ``config.json``: the derived config, written before the run's runner starts;
- ``lock``: held by the run's runner (:mod:`libs.agent.runner`) for as long
  as it lives, so anyone can tell whether a runner is still at work;
- ``started``: written by the runner just before it starts the hook: a
  runner that finds it (and no outcome) knows the run began and stopped
  unfinished, and reports that instead of starting it again;
- ``outcome.json``: the result to signal, with its timing;
- ``stdout``, ``stderr``, ``runner.log``, and ``work/``: the run's own folder, its
  user's, where the config is written and run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fcntl
import os
import sys
from pathlib import Path
from typing import Any

from libs.agent import atomic_files, results

# Runners that die before writing an outcome (never the hook's doing: a broken installation)
# are started again this many times, then the run is reported failed.
MAX_RUNNER_STARTS = 3
LOOK_SECONDS = 0.2


@dataclasses.dataclass(frozen=True)
class Outcome:
    result: dict[str, Any]
    started_at: float
    finished_at: float
    timed_out: bool = False

    @property
    def status_code(self) -> int | None:
        code = self.result.get("deploy_status_code")
        return code if isinstance(code, int) else None

    @classmethod
    def from_json(cls, data: Any) -> Outcome:
        return cls(result=dict(data["result"]), started_at=float(data["started_at"]),
                   finished_at=float(data["finished_at"]), timed_out=bool(data.get("timed_out")))


@dataclasses.dataclass(frozen=True)
class RunFolder:
    path: Path

    @property
    def config(self) -> Path:
        return self.path / "config.json"

    @property
    def lock(self) -> Path:
        return self.path / "lock"

    @property
    def started(self) -> Path:
        return self.path / "started"

    @property
    def outcome_path(self) -> Path:
        return self.path / "outcome.json"

    @property
    def stdout(self) -> Path:
        return self.path / "stdout"

    @property
    def stderr(self) -> Path:
        return self.path / "stderr"

    @property
    def runner_log(self) -> Path:
        return self.path / "runner.log"

    @property
    def work(self) -> Path:
        return self.path / "work"

    def prepare(self, document: Any) -> None:
        """Make the folder and its config, unless an earlier agent did (a run is prepared once)."""
        # Traversable, not listable: the run's user reaches work/ and nothing else here.
        self.path.mkdir(mode=0o711, exist_ok=True)
        if not self.config.exists():
            atomic_files.write_json(self.config, document)

    def outcome(self) -> Outcome | None:
        try:
            return Outcome.from_json(atomic_files.read_json(self.outcome_path))
        except FileNotFoundError:
            return None

    def write_outcome(self, outcome: Outcome) -> None:
        atomic_files.write_json(self.outcome_path, dataclasses.asdict(outcome))

    def runner_alive(self) -> bool:
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)  # closing releases a lock taken here
        return False


def runner_argv(folder: RunFolder, timeout: float, user: str, hooks_dir: Path | None) -> list[str]:
    argv = [sys.executable, "-m", "libs.agent.runner", str(folder.path), "--timeout", repr(timeout),
            "--user", user]
    return argv + (["--hooks-dir", str(hooks_dir)] if hooks_dir is not None else [])


async def start_runner(folder: RunFolder, argv: list[str]) -> asyncio.subprocess.Process:
    """The run's runner, in a session of its own: it outlives the agent (and a kill of the agent's group)."""
    # None of the agent's settings (its token) reach the runner or the hook.
    env = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_AGENT_")}
    with os.fdopen(os.open(folder.runner_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
        return await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, stdout=log,
                                                    stderr=log, env=env, start_new_session=True)


async def collect(folder: RunFolder, argv: list[str]) -> Outcome:
    """The run's outcome: waited for where a runner is at work, else got by starting one.

    A runner started for a run that never began runs it; one started for a run
    that began and stopped reports it interrupted; one that finds an outcome
    leaves. Two runners never both run it: the lock makes them take turns, and
    the second finds what the first left.
    """
    starts = 0
    while True:
        found = folder.outcome()
        if found is not None:
            return found
        if folder.runner_alive():
            await asyncio.sleep(LOOK_SECONDS)
            continue
        found = folder.outcome()  # it may have ended between the two looks
        if found is not None:
            return found
        if starts == MAX_RUNNER_STARTS:
            return _runner_failed(folder)
        starts += 1
        process = await start_runner(folder, argv)
        await process.wait()


def _runner_failed(folder: RunFolder) -> Outcome:
    now = os.path.getmtime(folder.runner_log) if folder.runner_log.exists() else 0.0
    outcome = Outcome(results.not_started("", f"its runner stopped {MAX_RUNNER_STARTS} times without a"
                                              f" result; see {folder.runner_log}"), now, now)
    with contextlib.suppress(OSError):
        folder.write_outcome(outcome)
    return outcome
