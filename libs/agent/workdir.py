"""The agent's folder: its journal, its runs, and the lock that keeps a second agent out.

``journal.json`` is rewritten whole (write, then rename) on every change;
a journal that cannot be read stops the agent rather than being taken as
empty, which would run every config again.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from libs.agent import atomic_files
from libs.agent.journal import Journal
from libs.agent.run_folder import RunFolder


class Busy(RuntimeError):
    """Another agent works in this folder."""


class Workdir:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: int | None = None

    @property
    def journal_path(self) -> Path:
        return self.path / "journal.json"

    def run(self, key: str) -> RunFolder:
        return RunFolder(self.path / "runs" / key)

    def open(self) -> None:
        """Make the folder (traversable by the runs' user, listable by no one else) and hold it.

        A folder that exists keeps its mode: it is the operator's.
        """
        self.path.mkdir(mode=0o711, parents=True, exist_ok=True)
        runs = self.path / "runs"
        runs.mkdir(mode=0o711, exist_ok=True)
        runs.chmod(0o711)
        fd = os.open(self.path / "agent.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise Busy(f"another agent works in {self.path}") from None
        self._lock = fd

    def close(self) -> None:
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def load_journal(self) -> Journal:
        try:
            data = atomic_files.read_json(self.journal_path)
        except FileNotFoundError:
            return Journal()
        return Journal.from_json(data)

    def save_journal(self, journal: Journal) -> None:
        atomic_files.write_json(self.journal_path, journal.to_json())
