"""A hook: what runs a config of one ``group``, as heat-config's hooks do (pure).

A hook is data in, data out: :meth:`Hook.launch` says what to start (argv,
environment, stdin, files to write first, where outputs appear) and
:meth:`Hook.result` turns what the process left into the signal's body. The
runner (:mod:`libs.agent.runner`) does the I/O between the two; which hook a
group has is :mod:`libs.agent.hook_registry`'s.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from libs.agent.configs import DerivedConfig

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclasses.dataclass(frozen=True)
class Place:
    """Where a run happens: its own folder, and who runs it."""

    work: Path
    user: str

    @property
    def environment(self) -> dict[str, str]:
        """What every hook's process starts from: none of the agent's own variables (its token)."""
        return {"PATH": DEFAULT_PATH, "HOME": str(self.work), "LANG": "C.UTF-8",
                "USER": self.user, "LOGNAME": self.user}


@dataclasses.dataclass(frozen=True)
class FileToWrite:
    path: Path
    content: bytes
    mode: int


@dataclasses.dataclass(frozen=True)
class Launch:
    # Nothing to start when empty: the run finishes at once with status 0.
    argv: tuple[str, ...]
    env: Mapping[str, str]
    stdin: bytes = b""
    files: tuple[FileToWrite, ...] = ()
    # Outputs are read from "<prefix>.<name>" (heat_outputs_path's convention).
    outputs_prefix: Path | None = None


@dataclasses.dataclass(frozen=True)
class Finished:
    exit_code: int
    stdout: str
    stderr: str
    # The declared outputs the process wrote, by name.
    outputs: Mapping[str, str]


class Hook(Protocol):
    def launch(self, config: DerivedConfig, place: Place) -> Launch: ...

    def result(self, config: DerivedConfig, finished: Finished) -> dict[str, Any]: ...


def standard_result(config: DerivedConfig, finished: Finished) -> dict[str, Any]:
    """The declared outputs written, then ``deploy_stdout``, ``deploy_stderr`` and ``deploy_status_code``."""
    found = {name: finished.outputs[name] for name in config.outputs if name in finished.outputs}
    return {**found, "deploy_stdout": finished.stdout, "deploy_stderr": finished.stderr,
            "deploy_status_code": finished.exit_code}


def hook_name(group: str) -> str:
    """The file name a group's hook has (heat-config keeps letters, digits, '-' and '_')."""
    return "".join(ch for ch in group if ch.isalnum() or ch in "-_")
