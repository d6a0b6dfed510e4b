"""Heat's actions and statuses, and the reasons Heat writes with them.

A leaf: it imports nothing of Ember's, so :mod:`libs.resources.steps` (which
:mod:`libs.engine` imports) can take its :class:`Action` from here.
"""

from __future__ import annotations

import enum
from typing import Final


class Action(enum.StrEnum):
    """Heat's actions, spelled as in its ``<ACTION>_<STATUS>`` (of a stack, a resource, a step).

    Members are their strings: they compare and hash equal to the plain ``str`` a
    row or a message carries, and are written as text.
    """

    INIT = "INIT"
    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    ROLLBACK = "ROLLBACK"
    SUSPEND = "SUSPEND"
    RESUME = "RESUME"
    CHECK = "CHECK"
    ADOPT = "ADOPT"
    SNAPSHOT = "SNAPSHOT"
    RESTORE = "RESTORE"


class Status(enum.StrEnum):
    """Heat's statuses, the second half of ``<ACTION>_<STATUS>``."""

    IN_PROGRESS = "IN_PROGRESS"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


# Traversals that converge resources to a template (update nodes forward, cleanup reversed).
CONVERGING: Final = frozenset({Action.CREATE, Action.UPDATE, Action.ROLLBACK, Action.RESTORE, Action.ADOPT})


def stack_started(action: Action) -> str:
    return f"Stack {action} started"


def stack_completed(action: Action) -> str:
    return f"Stack {action} completed successfully"


def resource_failed(action: str, reason: str) -> str:
    return f"Resource {action} failed: {reason}"


STATE_CHANGED = "state changed"
TIMED_OUT = "Timed out"
