"""Heat's rolling update arithmetic (how many members each batch has and how many it updates), and the
schema of a group's batch policies.

``min_in_service`` members keep their old definition while a batch of at most
``max_batch_size`` takes the new one; the group may grow by the batch for a
moment so that enough stay in service, as Heat's ``rolling_update`` does.
"""

from __future__ import annotations

from libs.resources.properties import PropSchema
from libs.template.constraints import Range


def needs_update(target: int, current: int, up_to_date: int) -> bool:
    return not up_to_date >= current == target


def next_batch(target: int, current: int, up_to_date: int, batch_size: int,
               min_in_service: int) -> tuple[int, int]:
    """(members during the batch, how many of them it updates)."""
    effective_min = min(min_in_service, target, current)
    effective_batch = min(batch_size, max(target - up_to_date, 0))
    capacity = effective_batch + max(min(current, target - effective_batch), effective_min)
    return capacity, effective_batch


def after_batch(target: int, current: int, up_to_date: int, capacity: int, updated: int) -> tuple[int, int]:
    """(members, members up to date) once a batch is done."""
    return capacity, up_to_date + updated - max(capacity - max(current, target), 0)


def batch_schema(what: str, *, min_in_service: bool) -> dict[str, PropSchema]:
    """A group's ``rolling_update`` (with ``min_in_service`` or not) or ``batch_create`` policy."""
    schema = {
        "max_batch_size": PropSchema("integer", f"The most {what} at once.", default=1,
                                     constraints=(Range(min=1),)),
        "pause_time": PropSchema("number", "The seconds to wait between two batches.", default=0,
                                 constraints=(Range(min=0),)),
    }
    if min_in_service:
        return {"min_in_service": PropSchema("integer", "The fewest members in service during the update.",
                                             default=0, constraints=(Range(min=0),)), **schema}
    return schema
