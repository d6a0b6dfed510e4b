"""Which hook runs each group on this machine.

Built in: ``script`` and ``ansible`` (where ``ansible-playbook`` is installed);
others are registered with :func:`register`, or are executables named after
the group in the agent's hooks folder, speaking heat-config's hook protocol
(the config as JSON on stdin, the result as JSON on stdout), so Heat's own
hooks for puppet, salt or docker-compose can be dropped in unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from libs.agent import ansible_hook, script_hook
from libs.agent.external_hook import ExternalHook
from libs.agent.hooks import Hook, hook_name

# name -> a factory of the hook, or of None where the hook cannot run on this machine.
_REGISTRY: dict[str, Callable[[], Hook | None]] = {
    "script": script_hook.ScriptHook,
    "ansible": ansible_hook.installed,
}


def register(group: str, factory: Callable[[], Hook | None]) -> None:
    """Make ``group`` run with the hook ``factory`` makes (in the agent and in its runners)."""
    _REGISTRY[hook_name(group)] = factory


class Hooks:
    """The hooks of this machine: the registered ones, then the executables of ``folder``."""

    def __init__(self, folder: Path | None) -> None:
        self._folder = folder

    def find(self, group: str) -> Hook | None:
        name = hook_name(group)
        if not name:
            return None
        factory = _REGISTRY.get(name)
        if factory is not None:
            return factory()
        if self._folder is not None:
            path = self._folder / name
            if path.is_file() and os.access(path, os.X_OK):
                return ExternalHook(path)
        return None

    def available(self, groups: Iterable[str]) -> frozenset[str]:
        """Which of ``groups`` have a hook here (looked up afresh: a hook may be installed later)."""
        return frozenset(group for group in groups if self.find(group) is not None)
