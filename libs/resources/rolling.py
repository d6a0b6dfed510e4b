"""Heat's rolling update arithmetic: how many members each batch has and how many it updates.

``min_in_service`` members keep their old definition while a batch of at most
``max_batch_size`` takes the new one; the group may grow by the batch for a
moment so that enough stay in service, as Heat's ``rolling_update`` does.
"""

from __future__ import annotations


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
