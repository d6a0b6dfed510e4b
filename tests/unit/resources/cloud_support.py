"""Driving a cloud resource plugin through its steps with scripted cloud answers (no cloud, no mock)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.engine.status import Action
from libs.resources.base import ResourceType
from libs.resources.steps import Call, Done, KeepType, StepContext, StepResult, Wait
from tests.unit.resources.resource_support import make_ctx

TAG = "ember-5d2e59b6-0000-4000-8000-000000000001"


def ctx_for(properties: Mapping[str, Any], **kwargs: Any) -> StepContext:
    return dataclasses.replace(make_ctx(properties, **kwargs), cloud_tag=TAG)


def ok(value: Any = None) -> Answer:
    return Answer(value=value)


def error(kind: ErrorKind, message: str = "boom", status: int | None = None,
          exception: str = "HttpException") -> Answer:
    return Answer(error=CloudError(kind, message, status, exception))


NOT_FOUND = error(ErrorKind.NOT_FOUND, "Not found", 404, "NotFoundException")


def after(ctx: StepContext, result: StepResult, answers: Mapping[str, Answer] | None = None,
          elapsed: float = 1.0) -> StepContext:
    """The context of the next check: the result's data and physical id recorded, the answers given."""
    data = dict(ctx.data)
    physical_id = ctx.physical_id
    if isinstance(result, (Wait, Call, Done)):
        for key, val in result.data.items():
            if val is None:
                data.pop(key, None)
            else:
                data[key] = val
        if not isinstance(result.physical_id, KeepType):
            physical_id = result.physical_id
    return dataclasses.replace(ctx, data=data, physical_id=physical_id, answers=dict(answers or {}),
                               now=ctx.now + elapsed)


def methods(result: StepResult) -> list[str]:
    assert isinstance(result, Call), result
    return [c.method for c in result.calls]


def call_of(result: StepResult, method: str) -> Any:
    assert isinstance(result, Call), result
    return next(c for c in result.calls if c.method == method)


def run(resource: ResourceType, action: Action, ctx: StepContext,
        script: Sequence[Mapping[str, Answer] | None]) -> tuple[list[StepResult], StepContext]:
    """``start``, then one ``check`` per script entry with those answers (None: the answers were lost)."""
    result = resource.start(action, ctx)
    results = [result]
    for answers in script:
        ctx = after(ctx, result, answers)
        result = resource.check(action, ctx)
        results.append(result)
    return results, after(ctx, result)
