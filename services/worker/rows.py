"""Small pure helpers over resource rows that both step paths share."""

from __future__ import annotations

from typing import Any

from libs.db import resources
from libs.engine import desired
from libs.engine.step import RowState
from libs.resources.base import physical_name


def state(row: resources.ResourceRow) -> RowState:
    return row.state()


def merged(data: dict[str, Any], changes: Any) -> dict[str, Any]:
    """A plugin's data after a step: its changes over the old, ``None`` deleting a key."""
    out = dict(data)
    for key, value in dict(changes).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def short_id(resource_id: int) -> str:
    # Stable per row, 12 lowercase characters, as Heat's short ids look.
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    n = (resource_id * 0x9E3779B97F4A7C15) & ((1 << 60) - 1)
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in range(12))


def event_physical_id(stack_name: str, row: resources.ResourceRow) -> str:
    """The physical id an event of ``row`` carries: before the resource has one, the name it will have
    (Heat's events fall back to the resource's physical name)."""
    return row.physical_id or physical_name(stack_name, row.name, short_id(row.id))


def deletion_policy(want: desired.Desired | None, name: str) -> str:
    if want is not None and name in want.definition.resources:
        return want.definition.resources[name].deletion_policy
    return "Delete"
