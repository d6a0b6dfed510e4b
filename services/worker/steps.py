"""The worker's handler: work items stepped in batches, the rare ones one at a time.

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

from libs.db import locks
from libs.engine.keys import NodeKey
from libs.errors import Conflict, Retry, describe, is_transient
from libs.evaluation_pool import INLINE, EvaluationPool
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import WorkItem
from libs.resources.registry import Registry
from libs.runtime import Runtime
from libs.telemetry import logs
from libs.template.limits import Limits
from libs.template.request import DEFAULT_LIMITS
from services.worker import batch
from services.worker.arrival import Arrival
from services.worker.coalescer import Coalescer
from services.worker.context import WorkerContext
from services.worker.desired_cache import DesiredCache
from services.worker.node import Node

log = logs.logger("worker")


class Steps:
    def __init__(self, rt: Runtime, registry: Registry, *, batch_size: int | None = None,
                 api_url: str | None = None, evaluation: EvaluationPool = INLINE,
                 limits: Limits = DEFAULT_LIMITS) -> None:
        self.rt = rt
        # Where signals reach this installation's api (a wait condition handle's endpoint).
        self.api_url = api_url
        self.registry = registry
        # What a nested stack may bring to its tree, checked as the worker makes it (as Heat's engine).
        self.limits = limits
        self.cache = DesiredCache()
        self.rng = random.SystemRandom()
        self.evaluation = evaluation
        self.ctx = WorkerContext(pool=rt.pool, bus=rt.bus, registry=registry, cache=self.cache, rng=self.rng,
                                 evaluation=evaluation, api_url=api_url, limits=limits)
        self.batches: Coalescer[Arrival, batch.Result] = Coalescer(
            self._run_batch, size=batch_size or rt.settings.worker_batch, parallel=2)

    async def handle(self, item: WorkItem, _delivery: Delivery) -> None:
        result = await self.batches.submit(Arrival(item, otel_context.get_current()))
        if isinstance(result, BaseException):
            raise result
        if result is batch.SLOW:
            await self.handle_one(item)

    async def _run_batch(self, arrivals: list[Arrival]) -> list[batch.Result]:
        size = {"ember.batch.size": len(arrivals)}
        links = [trace.Link(trace.get_current_span(a.trace).get_span_context()) for a in arrivals]
        with self.rt.bus.tracer.start_as_current_span("step batch", context=Context(), links=links,
                                                      attributes=size):
            try:
                done = await batch.step_batch(self.ctx, arrivals)
            except Exception as exc:
                if len(arrivals) == 1 or isinstance(exc, Retry) or is_transient(exc):
                    raise
                # One item's error must not fail the others (they would all be given up on
                # together): each goes on alone, where only its own error is its own.
                log.warning("a batch of %d failed (%s): stepping its items one by one", len(arrivals),
                            describe(exc))
                return [batch.SLOW] * len(arrivals)
            results = list(done.results)
            if done.ready:
                sent = await asyncio.gather(*(self._publish(r.stack_id, r.traversal_id, r.node,
                                                            arrivals[r.by].trace) for r in done.ready),
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
        key = NodeKey.parse(item.node)
        rid = key.resource_id
        with logs.log_context(stack_id=item.stack_id, traversal_id=item.traversal_id, node=item.node):
            async with self.rt.pool.acquire() as conn:
                if not await locks.try_lock_resource(conn, rid):
                    raise Conflict(f"resource {rid} is busy with another step")
                try:
                    await Node(self.ctx, conn, item, key).give_up(error)
                finally:
                    await locks.unlock_resource(conn, rid)

    async def handle_one(self, item: WorkItem) -> None:
        """One item on its own: every case, the rare ones included."""
        key = NodeKey.parse(item.node)
        rid = key.resource_id
        with logs.log_context(stack_id=item.stack_id, traversal_id=item.traversal_id, node=item.node):
            async with self.rt.pool.acquire() as conn:
                if not await locks.try_lock_resource(conn, rid):
                    raise Conflict(f"resource {rid} is busy with another step")
                node_run = Node(self.ctx, conn, item, key)
                try:
                    ready = await node_run.run()
                finally:
                    await locks.unlock_resource(conn, rid)
            for node in ready:
                await self._publish(item.stack_id, item.traversal_id, node)
            for notice in node_run.notices:
                await self.rt.bus.publish(
                    self.rt.names.hooks(notice.project, notice.stack_id, notice.resource_name), notice,
                    msg_id=notice.msg_id)


