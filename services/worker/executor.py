"""The worker's one executor: a step of the items that arrived together, one item included.

:func:`execute` steps every item: those the batch takes in one database round
(:mod:`services.worker.batch`), then, each in its own trace, with its own
connection and its resource's advisory lock, the ones a batch steps alone
(hooks, nested stacks, replacements, continuations, converge: :mod:`services.worker.node`).
A single item is the batch of one. What every item released (successors, hook
notices) comes back to the handler to publish after commit.

A step that asks for cloud calls (``Call``, an observe) has them made here, once
its lock and connection are let go, the calls of every item at once; then the
item's next step runs with their answers (:mod:`services.worker.pending` says
how a crash in between is survived).
"""

from __future__ import annotations

import asyncio
import dataclasses

from libs.cloud.caller import CloudTarget
from libs.cloud.calls import Answer, Answers
from libs.db import locks
from libs.db.resources import ResourceRow
from libs.engine.keys import NodeKey
from libs.errors import Conflict, Retry, describe, is_transient
from libs.messaging.payloads import HookNotice, WorkItem
from libs.telemetry import logs
from services.worker import batch
from services.worker.arrival import Arrival, Ready, acting_for
from services.worker.context import WorkerContext
from services.worker.node import Node
from services.worker.outcome import Calls

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


# Rounds of calls one delivery makes for one item before it lets the message go round again.
MAX_CALL_ROUNDS = 16


@dataclasses.dataclass
class _Alone:
    ready: list[str]
    notices: list[HookNotice]
    calls: Calls | None = None


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
    alone = [i for i, r in enumerate(results) if r is batch.SLOW or isinstance(r, Calls)]
    outs = await asyncio.gather(*(_step_alone(ctx, arrivals[i], results[i]) for i in alone),
                                return_exceptions=True)
    notices: list[tuple[HookNotice, int]] = []
    final: list[Result] = [r if r is None or isinstance(r, BaseException) else None for r in results]
    for i, out in zip(alone, outs, strict=True):
        if isinstance(out, BaseException):
            final[i] = out
            continue
        item = arrivals[i].item
        ready.extend(Ready(item.stack_id, item.traversal_id, node, i) for node in out.ready)
        notices.extend((n, i) for n in out.notices)
        released_by.append(i)
    return Executed(final, ready, notices, released_by)


async def _step_alone(ctx: WorkerContext, arrival: Arrival, first: batch.Result) -> _Alone:
    """One item on its own, in its own trace: stepped (unless its batch step asked for calls),
    then, while its steps ask for calls, the calls made and its next step run with the answers."""
    with acting_for(arrival.item, arrival.trace):
        done = _Alone([], [], first) if isinstance(first, Calls) else await _step_one(ctx, arrival)
        rounds = 0
        while done.calls is not None:
            rounds += 1
            if rounds > MAX_CALL_ROUNDS:
                # The calls stay recorded as attempted: the next delivery checks without answers.
                raise Retry(0.0, "a step asked for calls too many times in one delivery")
            answers = await _make(ctx, done.calls)
            more = await _step_one(ctx, arrival, answers=answers, answered=done.calls.row)
            done = _Alone(done.ready + more.ready, done.notices + more.notices, more.calls)
        return done


async def _make(ctx: WorkerContext, calls: Calls) -> dict[str, Answer]:
    """The calls made with nothing held (no connection, no lock): a slow cloud holds up no one else."""
    assert ctx.caller is not None  # a Call with no caller failed its resource instead
    target = CloudTarget(ctx.cloud, calls.project)
    names = [c.describe() for c in calls.calls]  # never their arguments: they may hold secrets
    with ctx.bus.tracer.start_as_current_span("cloud calls", attributes={"ember.cloud.calls": names}):
        return await ctx.caller.call(target, calls.calls)


async def _step_one(ctx: WorkerContext, arrival: Arrival, *, answers: Answers | None = None,
                    answered: ResourceRow | None = None) -> _Alone:
    """One step of one item on its own connection, under its resource's lock."""
    item = arrival.item
    key = NodeKey.parse(item.node)
    async with ctx.pool.acquire() as conn:
        if not await locks.try_lock_resource(conn, key.resource_id):
            raise Conflict(f"resource {key.resource_id} is busy with another step")
        node = Node(ctx, conn, item, key, answers=answers, answered=answered)
        try:
            ready = await node.run()
        finally:
            await locks.unlock_resource(conn, key.resource_id)
    return _Alone(ready, node.notices, node.calls)


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
