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
from typing import cast

from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.cloud.targets import NoCloudConfigured, target_for
from libs.db import locks
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


# Rounds of calls one delivery makes for its items before it lets their messages go round again.
MAX_CALL_ROUNDS = 16


@dataclasses.dataclass
class _Alone:
    ready: list[str]
    notices: list[HookNotice]
    calls: Calls | None = None


async def execute(ctx: WorkerContext, arrivals: list[Arrival]) -> Executed:
    """Step every item; while steps ask for calls, make them (all at once) and step those items again."""
    arrivals = list(arrivals)  # each item's answers, once it has some
    done = await _round(ctx, arrivals)
    waiting = [i for i, r in enumerate(done.results) if isinstance(r, Calls)]
    rounds = 0
    while waiting:
        rounds += 1
        if rounds > MAX_CALL_ROUNDS:
            for i in waiting:  # still kept as attempted: the next delivery checks without answers
                done.results[i] = Retry(0.0, "steps asked for calls too many times in one delivery")
            break
        calls = [cast(Calls, done.results[i]) for i in waiting]
        answers = await asyncio.gather(
            *(_make(ctx, arrivals[i], c) for i, c in zip(waiting, calls, strict=True)),
            return_exceptions=True)
        again: list[int] = []
        for i, c, a in zip(waiting, calls, answers, strict=True):
            if isinstance(a, BaseException):
                done.results[i] = a
            else:
                arrivals[i] = dataclasses.replace(arrivals[i], answers=a,
                                                  answered=c.row.version if c.row is not None else None)
                again.append(i)
        try:
            more = await _round(ctx, [arrivals[i] for i in again])
        except Exception as exc:  # theirs alone: the items done in earlier rounds keep their results
            for i in again:
                done.results[i] = exc
            break
        for j, i in enumerate(again):
            done.results[i] = more.results[j]
        done.ready.extend(r._replace(by=again[r.by]) for r in more.ready)
        done.notices.extend((n, again[by]) for n, by in more.notices)
        done.released_by.extend(again[by] for by in more.released_by)
        waiting = [again[j] for j, r in enumerate(more.results) if isinstance(r, Calls)]
    return Executed([r if not isinstance(r, Calls) else None for r in done.results], done.ready,
                    done.notices, sorted(set(done.released_by)))


@dataclasses.dataclass
class _Round:
    results: list[BaseException | Calls | None]
    ready: list[Ready]
    notices: list[tuple[HookNotice, int]]
    released_by: list[int]


async def _round(ctx: WorkerContext, arrivals: list[Arrival]) -> _Round:
    """One step of each item: those the batch takes in one round, the others alone."""
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
    final: list[BaseException | Calls | None] = [r if not isinstance(r, batch._Slow) else None
                                                 for r in results]
    for i, out in zip(alone, outs, strict=True):
        if isinstance(out, BaseException):
            final[i] = out
            continue
        item = arrivals[i].item
        ready.extend(Ready(item.stack_id, item.traversal_id, node, i) for node in out.ready)
        notices.extend((n, i) for n in out.notices)
        released_by.append(i)
        final[i] = out.calls
    return _Round(final, ready, notices, released_by)


async def _step_alone(ctx: WorkerContext, arrival: Arrival) -> _Alone:
    """One step of one item on its own connection, under its resource's lock, in its own trace."""
    item = arrival.item
    key = NodeKey.parse(item.node)
    with acting_for(item, arrival.trace):
        async with ctx.pool.acquire() as conn:
            if not await locks.try_lock_resource(conn, key.resource_id):
                raise Conflict(f"resource {key.resource_id} is busy with another step")
            node = Node(ctx, conn, item, key, answers=arrival.answers, answered=arrival.answered)
            try:
                ready = await node.run()
            finally:
                await locks.unlock_resource(conn, key.resource_id)
    return _Alone(ready, node.notices, node.calls)


async def _make(ctx: WorkerContext, arrival: Arrival, calls: Calls) -> dict[str, Answer]:
    """The calls made with nothing held (no connection, no lock): a slow cloud holds up no one else."""
    assert ctx.caller is not None  # a Call with no caller failed its resource instead
    names = [c.describe() for c in calls.calls]  # never their arguments: they may hold secrets
    try:
        target = target_for(ctx.cloud, calls.project)
    except NoCloudConfigured as exc:
        refused = Answer(error=CloudError(ErrorKind.FORBIDDEN, str(exc), exception="NoCloudConfigured"))
        return {c.key: refused for c in calls.calls}
    with acting_for(arrival.item, arrival.trace), ctx.bus.tracer.start_as_current_span(
            "cloud calls", attributes={"ember.cloud.calls": names}):
        return await ctx.caller.call(target, calls.calls)


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
