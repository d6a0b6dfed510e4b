"""Scaling an auto scaling group now: a policy's signal, or a NATS request, changes its capacity.

As in Heat, the group's nested stack is updated directly (the parent stack
runs no traversal); when that nested update completes, the group resource's
attributes and the parent's outputs are refreshed (see the worker's
``stack_end``). A request within the cooldown after the last scaling changes
nothing and answers the capacity the group has.
"""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from typing import Any

import asyncpg
import orjson

from libs import operations
from libs.db import events, resources, stacks, templates
from libs.engine.status import Status
from libs.evaluation_pool import INLINE, Evaluator
from libs.messaging.bus import Bus
from libs.resources import autoscaling
from libs.resources.registry import Registry
from libs.template.environment import Environment
from libs.template.limits import Limits
from libs.template.request import StackRequest

# The nested template is made here, and grows with the group: no request limit applies.
GENERATED = Limits(max_resources_per_stack=-1, max_template_size=2**31)
_RNG = random.SystemRandom()


@dataclasses.dataclass(frozen=True)
class Adjustment:
    adjustment_type: str
    adjustment: float
    min_adjustment_step: int | None = None
    cooldown: int | None = None


async def find_group(conn: Any, stack_id: uuid.UUID, name_or_id: str) -> resources.ResourceRow | None:
    rows = [r for r in await resources.for_stack(conn, stack_id) if r.is_current]
    return next((r for r in rows if name_or_id in (r.name, r.physical_id, r.reference)), None)


def _cooling(group: resources.ResourceRow) -> bool:
    return time.time() < float(group.data.get(autoscaling.COOLDOWN_END_KEY) or 0)


async def scale(pool: asyncpg.Pool, bus: Bus, registry: Registry, stack: stacks.StackRow, *,
                group: resources.ResourceRow, change: Adjustment, evaluation: Evaluator = INLINE) -> int:
    """Apply ``change`` to ``group``; returns the capacity the group now has (or keeps).

    As in Heat, nothing changes while the group's cooldown lasts (from its last
    create, update or scaling) or while it is being resized; a scaling starts a
    cooldown of the policy's ``cooldown``, else the group's.
    """
    plugin = registry.get(autoscaling.AutoScalingGroup.type_name)
    assert isinstance(plugin, autoscaling.AutoScalingGroup)
    props = group.properties or {}
    names = orjson.loads(group.data.get(autoscaling.NAMES_KEY) or "[]")
    current = len(names)
    if _cooling(group):
        return current
    capacity = autoscaling.new_capacity(current, adjustment_type=change.adjustment_type,
                                        adjustment=change.adjustment, min_size=int(props["min_size"]),
                                        max_size=int(props["max_size"]),
                                        min_adjustment_step=change.min_adjustment_step)
    if capacity == current or group.status == Status.IN_PROGRESS:
        return current
    members = autoscaling.next_names(names, capacity, lambda: autoscaling.member_name(_RNG))
    async with pool.acquire() as conn:
        raw = await templates.get(conn, stack.template_id) if stack.template_id else None
        child = await stacks.get(conn, uuid.UUID(group.physical_id or str(uuid.UUID(int=0))))
        if child is None or child.status == Status.IN_PROGRESS:
            return current  # not made yet, or being resized (Heat's "scaling activity")
        cooldown = change.cooldown if change.cooldown is not None else props.get("cooldown")
        written = await resources.write(conn, group, data={
            **group.data, autoscaling.NAMES_KEY: orjson.dumps(members).decode(),
            autoscaling.CAPACITY_KEY: str(capacity),
            autoscaling.COOLDOWN_END_KEY: str(autoscaling.cooldown_end(group.data, time.time(), cooldown))})
        if written is None:
            return current  # changed meanwhile: the caller may try again
        await events.add(conn, stack_id=stack.id, resource_name=group.name,
                         physical_resource_id=group.physical_id, resource_type=group.type, action="SIGNAL",
                         status=Status.COMPLETE, reason=f"Scaling from {current} to {capacity}")
    env = Environment.from_dict(raw.environment if raw else {}).child_environment(group.name).to_dict()
    await operations.update_stack(
        pool, bus, child, stack_request=StackRequest(template=plugin.template_for(props, members),
                                                     files=raw.files if raw else {}, environment=env),
        options=operations.Options(disable_rollback=True, timeout_mins=stack.timeout_mins), limits=GENERATED,
        builtin_types=registry.types(), registry=registry, evaluation=evaluation)
    return capacity

