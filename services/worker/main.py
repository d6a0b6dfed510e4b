"""``ember worker``: the process entry point."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from libs import evaluation_pool, lifecycle
from libs.consuming import consuming
from libs.evaluation_pool import EvaluationPool
from libs.messaging.consumer import Handler
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import Probe, WorkItem
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.template.limits import Limits
from services.worker.hook_sweep import sweeping
from services.worker.steps import Steps


def handlers(rt: Runtime, evaluation: EvaluationPool) -> Handler:
    steps = Steps(rt, default_registry(), api_url=rt.settings.api_url, evaluation=evaluation,
                  limits=Limits(max_resources_per_stack=rt.settings.api.max_resources_per_stack))
    return Dispatch({Probe: rt.answer_probe, WorkItem: steps.handle}, give_ups={WorkItem: steps.give_up})


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    settings = rt.settings
    # Opened first and closed last: a step drained at shutdown may still evaluate.
    async with evaluation_pool.opened_for(settings) as pool:
        working = consuming(lambda rt: rt.names.workers, lambda rt: handlers(rt, pool))
        async with working(rt), sweeping(rt):
            yield


def main() -> None:
    lifecycle.run("worker", body)
