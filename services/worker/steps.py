"""The worker's handler: work items coalesced into batches for the one executor, then published.

For a work item (stack, traversal, node) the worker holds the resource row's
advisory lock for the length of one step, decides what the node does
(:func:`libs.engine.step.decide`), runs one plugin step, and writes the
outcome with a compare-and-set on the row's version. A finished node releases
its successors in the same transaction; they are published after commit, and
published again by whoever finds the node already done (a crash between commit
and publish costs a redelivery, nothing more). A step that must wait raises
``Retry``: no worker sleeps on the cloud.

Each item is stepped in the trace it arrived in (its consumer's span), batched
or not. A batch's own span belongs to no one operation: it starts a trace of
its own and links to the spans of the items it steps.
"""

from __future__ import annotations

import asyncio
import random

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context

from libs.cloud.caller import CloudCaller
from libs.config import CloudSettings
from libs.evaluation_pool import INLINE, EvaluationPool
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import WorkItem
from libs.resources.registry import Registry
from libs.runtime import Runtime
from libs.telemetry import logs
from libs.template.limits import Limits
from libs.template.request import DEFAULT_LIMITS
from services.worker import executor
from services.worker.arrival import Arrival
from services.worker.coalescer import Coalescer
from services.worker.context import WorkerContext
from services.worker.desired_cache import DesiredCache

log = logs.logger("worker")


class Steps:
    def __init__(self, rt: Runtime, registry: Registry, *, batch_size: int | None = None,
                 api_url: str | None = None, evaluation: EvaluationPool = INLINE,
                 limits: Limits = DEFAULT_LIMITS, caller: CloudCaller | None = None,
                 cloud: CloudSettings | None = None, retry_limit: int = 2, ready_timeout: float | None = None
                 ) -> None:
        # A step's calls go to the cloud its stack's project is mapped to.
        self.rt = rt
        self.ctx = WorkerContext(pool=rt.pool, bus=rt.bus, registry=registry, cache=DesiredCache(),
                                 rng=random.SystemRandom(), evaluation=evaluation, api_url=api_url,
                                 limits=limits, caller=caller, cloud=cloud or CloudSettings(),
                                 retry_limit=retry_limit, ready_timeout=ready_timeout)
        self.batches: Coalescer[Arrival, executor.Result] = Coalescer(
            self._run_batch, size=batch_size or rt.settings.worker_batch, parallel=2)

    async def handle(self, item: WorkItem, _delivery: Delivery) -> None:
        result = await self.batches.submit(Arrival(item, otel_context.get_current()))
        if result is not None:
            raise result

    async def _run_batch(self, arrivals: list[Arrival]) -> list[executor.Result]:
        size = {"ember.batch.size": len(arrivals)}
        links = [trace.Link(trace.get_current_span(a.trace).get_span_context()) for a in arrivals]
        with self.rt.bus.tracer.start_as_current_span("step batch", context=Context(), links=links,
                                                      attributes=size):
            done = await executor.execute(self.ctx, arrivals)
            results = list(done.results)
            sent = await asyncio.gather(
                *(self._publish(r.stack_id, r.traversal_id, r.node, arrivals[r.by].trace)
                  for r in done.ready),
                *(self.rt.bus.publish(self.rt.names.hooks(n.project, n.stack_id, n.resource_name), n,
                                      msg_id=n.msg_id, context=arrivals[by].trace) for n, by in done.notices),
                return_exceptions=True)
            failed = next((e for e in sent if isinstance(e, BaseException)), None)
            if failed is not None:  # redelivered, a done node publishes its successors again
                for index in done.released_by:
                    results[index] = failed
            return results

    async def _publish(self, stack_id: str, traversal_id: str, node: str, context: Context | None = None
                       ) -> None:
        nxt = WorkItem(stack_id=stack_id, traversal_id=traversal_id, node=node)
        await self.rt.bus.publish(self.rt.names.work(stack_id), nxt, msg_id=nxt.msg_id, context=context)

    async def give_up(self, item: WorkItem, error: BaseException) -> None:
        """This node's step failed the same way too often: fail its resource, with the error."""
        await executor.give_up(self.ctx, item, error)
