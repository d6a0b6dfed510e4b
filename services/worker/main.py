"""``ember worker``: the process entry point."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator

from libs import evaluation_pool, lifecycle
from libs.cloud import sdk
from libs.cloud.caller import CloudCaller
from libs.consuming import consuming
from libs.evaluation_pool import EvaluationPool
from libs.messaging.consumer import Handler
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import Probe, WorkItem
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.template.limits import Limits
from services.worker.hook_sweep import sweeping
from services.worker.signals import answering
from services.worker.steps import Steps


def handlers(rt: Runtime, evaluation: EvaluationPool, caller: CloudCaller | None) -> Handler:
    steps = Steps(rt, default_registry(), api_url=rt.settings.api_url, evaluation=evaluation,
                  limits=Limits(max_resources_per_stack=rt.settings.api.max_resources_per_stack),
                  caller=caller, cloud=rt.settings.cloud, retry_limit=rt.settings.action_retry_limit,
                  ready_timeout=rt.settings.ready_timeout)
    return Dispatch({Probe: rt.answer_probe, WorkItem: steps.handle}, give_ups={WorkItem: steps.give_up})


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    settings = rt.settings
    # Opened first and closed last: a step drained at shutdown may still evaluate.
    # The worker retries the cloud's refusals by redelivery (services/worker/pending.py),
    # never by sleeping in the caller.
    cloud = dataclasses.replace(settings.cloud, retries=0)
    async with evaluation_pool.opened_for(settings) as pool, sdk.opened(cloud, rt.tracer) as caller:
        working = consuming(lambda rt: rt.names.workers, lambda rt: handlers(rt, pool, caller))
        async with working(rt), answering(rt), sweeping(rt):
            yield


def main() -> None:
    lifecycle.run("worker", body)
