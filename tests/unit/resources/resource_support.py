"""Helpers for driving resource plugins through their steps with a fake clock."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

from libs.engine.status import Action
from libs.resources.base import ResourceType
from libs.resources.registry import default_registry
from libs.resources.steps import Done, KeepType, StepContext, StepResult, Wait

STACK = "st"
SHORT_ID = "abcdefghijkl"


def plugin(type_name: str) -> ResourceType:
    return default_registry().get(type_name)


def make_ctx(properties: Mapping[str, Any], *, resource_name: str = "r1",
             old_properties: Mapping[str, Any] | None = None, physical_id: str | None = None,
             data: Mapping[str, str] | None = None, now: float = 100.0, seed: int = 7) -> StepContext:
    return StepContext(
        stack_id="5d2e59b6-6c2f-4ad4-9f65-0f2c1b7e1f10", stack_name=STACK, resource_name=resource_name,
        physical_id=physical_id, properties=properties, old_properties=old_properties,
        data=dict(data or {}), now=now, started_at=now, short_id=SHORT_ID, rng=random.Random(seed))


def drive(resource: ResourceType, action: Action, ctx: StepContext, times: Sequence[float]
          ) -> list[StepResult]:
    """``start`` at ``times[0]``, then ``check`` at each later time, as the worker would.

    Between steps the context takes what a Wait asked to persist, like the worker's row.
    """
    results: list[StepResult] = []
    for i, now in enumerate(times):
        ctx = dataclasses.replace(ctx, now=now)
        result = resource.start(action, ctx) if i == 0 else resource.check(action, ctx)
        results.append(result)
        if isinstance(result, (Wait, Done)):
            data = {**ctx.data, **{k: v for k, v in result.data.items() if v is not None}}
            for key in [k for k, v in result.data.items() if v is None]:
                data.pop(key, None)
            physical_id = (ctx.physical_id if isinstance(result.physical_id, KeepType)
                           else result.physical_id)
            ctx = dataclasses.replace(ctx, data=data, physical_id=physical_id)
    return results
