"""A server's lifecycle as data: the status a transition shows, what it settles to, and Nova's state triple.

Pure. A transition under way is a ``Task`` with a due time; the database
settles it when it is due (store.settle), with the outcome this module names.
"""

from __future__ import annotations

import dataclasses
import enum


class Task(enum.StrEnum):
    BOOT = "boot"
    RESIZE = "resize"
    REVERT = "revert"
    REBOOT = "reboot"
    HARD_REBOOT = "hard_reboot"
    REBUILD = "rebuild"
    STOP = "stop"
    START = "start"
    SUSPEND = "suspend"
    RESUME = "resume"
    DELETE = "delete"


# The status a server shows while the task runs (None: keeps the one it had).
SHOWN = {Task.BOOT: "BUILD", Task.RESIZE: "RESIZE", Task.REVERT: "REVERT_RESIZE", Task.REBOOT: "REBOOT",
         Task.HARD_REBOOT: "HARD_REBOOT", Task.REBUILD: "REBUILD", Task.STOP: None, Task.START: None,
         Task.SUSPEND: None, Task.RESUME: None, Task.DELETE: None}

# The status it settles to (BOOT: ACTIVE, or ERROR for a boot chosen to fail).
SETTLED = {Task.BOOT: "ACTIVE", Task.RESIZE: "VERIFY_RESIZE", Task.REVERT: "ACTIVE", Task.REBOOT: "ACTIVE",
           Task.HARD_REBOOT: "ACTIVE", Task.REBUILD: "ACTIVE", Task.STOP: "SHUTOFF", Task.START: "ACTIVE",
           Task.SUSPEND: "SUSPENDED", Task.RESUME: "ACTIVE"}

TASK_STATE = {Task.BOOT: "spawning", Task.RESIZE: "resize_migrating", Task.REVERT: "resize_reverting",
              Task.REBOOT: "rebooting", Task.HARD_REBOOT: "rebooting_hard", Task.REBUILD: "rebuilding",
              Task.STOP: "powering-off", Task.START: "powering-on", Task.SUSPEND: "suspending",
              Task.RESUME: "resuming", Task.DELETE: "deleting"}

VM_STATE = {"BUILD": "building", "ACTIVE": "active", "ERROR": "error", "RESIZE": "active",
            "VERIFY_RESIZE": "resized", "REVERT_RESIZE": "resized", "REBOOT": "active",
            "HARD_REBOOT": "active", "REBUILD": "active", "SHUTOFF": "stopped", "SUSPENDED": "suspended"}

NO_STATE, RUNNING, SHUTDOWN, SUSPENDED = 0, 1, 4, 7

BOOT_FAULT = "No valid host was found. There are not enough hosts available."


@dataclasses.dataclass(frozen=True)
class Shown:
    vm_state: str
    task_state: str | None
    power_state: int


def shown(status: str, task: Task | None) -> Shown:
    power = RUNNING
    if status in ("BUILD", "ERROR", "REBUILD"):
        power = NO_STATE
    elif status == "SHUTOFF":
        power = SHUTDOWN
    elif status == "SUSPENDED":
        power = SUSPENDED
    return Shown(VM_STATE.get(status, "active"), TASK_STATE[task] if task else None, power)


# Which statuses an action may start from: Nova's 409 otherwise.
ALLOWED = {
    "resize": ("ACTIVE", "SHUTOFF"),
    "confirmResize": ("VERIFY_RESIZE",),
    "revertResize": ("VERIFY_RESIZE",),
    "os-stop": ("ACTIVE", "ERROR"),
    "os-start": ("SHUTOFF",),
    "reboot": ("ACTIVE", "SHUTOFF", "ERROR", "REBOOT", "HARD_REBOOT"),
    "rebuild": ("ACTIVE", "SHUTOFF", "ERROR"),
    "suspend": ("ACTIVE", "SHUTOFF"),
    "resume": ("SUSPENDED",),
}


def refusal(action: str, server_id: str, status: str, task: Task | None) -> str | None:
    """Nova's conflict message when ``action`` cannot run now; None when it may."""
    if task is not None:
        return f"Cannot '{action}' instance {server_id} while it is in task_state {TASK_STATE[task]}"
    allowed = ALLOWED.get(action)
    if allowed is not None and status not in allowed:
        vm_state = VM_STATE.get(status, status)
        return f"Cannot '{action}' instance {server_id} while it is in vm_state {vm_state}"
    return None
