"""Heat's actions and statuses, and the reasons Heat writes with them."""

from __future__ import annotations

from typing import Literal

Action = Literal["INIT", "CREATE", "UPDATE", "DELETE", "ROLLBACK", "SUSPEND", "RESUME", "CHECK",
                 "ADOPT", "SNAPSHOT", "RESTORE"]
Status = Literal["IN_PROGRESS", "COMPLETE", "FAILED"]

IN_PROGRESS: Status = "IN_PROGRESS"
COMPLETE: Status = "COMPLETE"
FAILED: Status = "FAILED"

# Traversals that converge resources to a template (update nodes forward, cleanup reversed).
CONVERGING = frozenset({"CREATE", "UPDATE", "ROLLBACK", "RESTORE", "ADOPT"})


def stack_started(action: str) -> str:
    return f"Stack {action} started"


def stack_completed(action: str) -> str:
    return f"Stack {action} completed successfully"


def resource_failed(action: str, reason: str) -> str:
    return f"Resource {action} failed: {reason}"


STATE_CHANGED = "state changed"
TIMED_OUT = "Timed out"
