"""The worker's one executor: a step of the items that arrived together, one item included.

:func:`execute` steps every item: those the batch takes in one database round
(:mod:`services.worker.batch`), then, each in its own trace, with its own
connection and its resource's advisory lock, the ones a batch steps alone
(hooks, nested stacks, replacements, continuations, converge: :mod:`services.worker.node`).
A single item is the batch of one. What every item released (successors, hook
notices) comes back to the handler to publish after commit.
"""

from __future__ import annotations

import asyncio
import dataclasses

from libs.db import locks
from libs.engine.keys import NodeKey
from libs.errors import Conflict, Retry, describe, is_transient
from libs.messaging.payloads import HookNotice, WorkItem
from libs.telemetry import logs
from services.worker import batch
from services.worker.arrival import Arrival, Ready, acting_for
from services.worker.context import WorkerContext
from services.worker.node import Node

log = logs.logger("worker")
Result = BaseException | None


@dataclasses.dataclass(frozen=True)
class Executed:
    results: list[Result]
    # Released by these steps, to publish after commit; ``by`` is the item whose step released it.
    ready: list[Ready]
    notices: list[tuple[HookNotice, int]]
    # Which items released something, so a failed publish naks exactly them.
    released_by: list[int]


@dataclasses.dataclass
class _Alone:
    ready: list[str]
    notices: list[HookNotice]


async def execute(ctx: WorkerContext, arrivals: list[Arrival]) -> Executed:
    try:
        done = await batch.step_batch(ctx, arrivals)
        results: list[batch.Result] = list(done.results)
        ready, released_by = list(done.ready), list(done.released_by)
    except Exception as exc:
        if len(arrivals) == 1 or isinstance(exc, Retry) or is_transient(exc):
            raise
        # One item's error must not fail the others (they would all be given up on
        # together): each goes on alone, where only its own error is its own.
        log.warning("a batch of %d failed (%s): stepping its items one by one", len(arrivals),
                    describe(exc))
        results, ready, released_by = [batch.SLOW] * len(arrivals), [], []
    alone = [i for i, r in enumerate(results) if r is batch.SLOW]
    outs = await asyncio.gather(*(_step_alone(ctx, arrivals[i]) for i in alone), return_exceptions=True)
    notices: list[tuple[HookNotice, int]] = []
    final: list[Result] = [r if not isinstance(r, batch._Slow) else None for r in results]
    for i, out in zip(alone, outs, strict=True):
        if isinstance(out, BaseException):
            final[i] = out
            continue
        item = arrivals[i].item
        ready.extend(Ready(item.stack_id, item.traversal_id, node, i) for node in out.ready)
        notices.extend((n, i) for n in out.notices)
        released_by.append(i)
    return Executed(final, ready, notices, released_by)


async def _step_alone(ctx: WorkerContext, arrival: Arrival) -> _Alone:
    """One item stepped on its own connection, under its resource's lock, in its own trace."""
    item = arrival.item
    key = NodeKey.parse(item.node)
    with acting_for(item, arrival.trace):
        async with ctx.pool.acquire() as conn:
            if not await locks.try_lock_resource(conn, key.resource_id):
                raise Conflict(f"resource {key.resource_id} is busy with another step")
            node = Node(ctx, conn, item, key)
            try:
                ready = await node.run()
            finally:
                await locks.unlock_resource(conn, key.resource_id)
    return _Alone(ready, node.notices)


async def give_up(ctx: WorkerContext, item: WorkItem, error: BaseException) -> None:
    """This node's step failed the same way too often: fail its resource, with the error."""
    key = NodeKey.parse(item.node)
    with logs.log_context(stack_id=item.stack_id, traversal_id=item.traversal_id, node=item.node):
        async with ctx.pool.acquire() as conn:
            if not await locks.try_lock_resource(conn, key.resource_id):
                raise Conflict(f"resource {key.resource_id} is busy with another step")
            try:
                await Node(ctx, conn, item, key).give_up(error)
            finally:
                await locks.unlock_resource(conn, key.resource_id)
