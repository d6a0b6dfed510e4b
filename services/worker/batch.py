"""Many work items stepped in one database round: the executor's common path.

Items that reach a worker together are stepped together: their resource locks
in one statement, their stack, traversal, node and row reads in one each, the
"started" writes and events of every first step in one transaction, and the
outcomes (:mod:`services.worker.outcome`), events and node releases of every
step in a second, through the one writer. The plugin steps run between the two,
after the first commit, so a crash between a cloud call and its record still
finds the ``IN_PROGRESS`` row with this traversal on redelivery. A step that
asks for cloud calls gives back :class:`~services.worker.outcome.Calls`: the
executor makes them once the locks are let go and steps the item again.

What the batch does not step it hands back unchanged (:data:`SLOW`) for the
executor to step alone (:mod:`services.worker.node`): a stale, timed-out or
converging traversal, a replacement, a node that may pause at a hook, a
resource whose properties are resolved in the evaluation pool or fail, a
renamed type, a type that reaches beyond its row (nested stacks, signals,
peers), an update refused, a resource taken over by its external id, a rollback's
server (which may take back what a failed replacement took from it).
Each item still gets its own outcome, so the consumer acks, naks or terminates
every message as it would alone.

Items of several operations share a batch, yet each item's work stays in its
own operation's trace (:mod:`services.worker.arrival`): its events keep the
item's trace context, the successors it releases are published in it, and the
stack's end (its event, a rollback request) is written in the trace of the
item that reached it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections import defaultdict
from typing import Any, Final

from opentelemetry.context import Context

from libs.cloud.calls import Answers
from libs.db import Conn, breakpoints, locks, resources, stacks, traversals
from libs.engine import create_retry, desired, hooks, status
from libs.engine.keys import NodeKey
from libs.engine.status import Action, Status
from libs.engine.step import Decision, Verb, restores_replaced
from libs.errors import Conflict, Permanent, Retry
from libs.messaging.payloads import WorkItem
from libs.resources.base import ResourceType
from libs.resources.registry import Registry
from libs.resources.steps import Nest, StepResult, Store
from libs.telemetry.propagation import Stored
from libs.template.registry import ResourceRegistry
from libs.template.resolution import StackResolver, StaticResourceData
from services.worker import outcome, pending, stack_end, writer
from services.worker import rows as rowkit
from services.worker.arrival import Arrival, Ready, acting_for
from services.worker.context import WorkerContext
from services.worker.evaluation import OutputsOf
from services.worker.outcome import Calls, Outcome


class _Slow:
    def __repr__(self) -> str:
        return "SLOW"


SLOW: Final = _Slow()
Result = BaseException | _Slow | Calls | None
# Verbs whose first step the batch takes itself (a replacement and a takeover go one at a time).
ALONE = frozenset({Verb.REPLACE, Verb.EXTERNAL})


@dataclasses.dataclass
class _Job:
    index: int
    item: WorkItem
    key: NodeKey
    trace: Context
    row: resources.ResourceRow | None = None
    successors: list[str] = dataclasses.field(default_factory=list)
    decision: Decision | None = None
    props: dict[str, Any] | None = None
    plugin: ResourceType | None = None
    action: str = ""
    # Whether the step is the action's first (``start``), else a ``check`` of the action under way.
    first: bool = True
    outcome: StepResult | None = None
    # An outcome the job has without a plugin step (its kept calls to make).
    direct: Outcome | None = None
    # The answers of the calls its last step asked for, and the row version they were made for.
    answers: Answers | None = None
    answered: int | None = None
    _stored: Stored | None = None

    def stored(self) -> Stored:
        """The item's trace context, as its events keep it."""
        if self._stored is None:
            self._stored = Stored.of(self.trace)
        return self._stored

    def acting(self) -> contextlib.AbstractContextManager[None]:
        """Shared work done for this item (a stack's end): in its trace, with its ids logged."""
        return acting_for(self.item, self.trace, self.row.name if self.row is not None else None)


@dataclasses.dataclass
class _Group:
    """The items of one traversal in this batch."""

    stack: stacks.StackRow
    trav: traversals.TraversalRow
    want: desired.Desired | None
    jobs: list[_Job]
    finish: list[_Job] = dataclasses.field(default_factory=list)
    # Nodes found done (a redelivery), with their successors to publish again.
    again: list[tuple[_Job, list[str]]] = dataclasses.field(default_factory=list)
    # The traversal's first failure in this batch: the item that met it, and the stack's reason.
    failure: tuple[_Job, str] | None = None
    # The environments rows were made with, by template id (see rowkit.own_template).
    envs: dict[uuid.UUID, ResourceRegistry] = dataclasses.field(default_factory=dict)
    # Resources whose properties are resolved in the evaluation pool (one item at a time).
    heavy: frozenset[str] = frozenset()
    # Whether the worker has a cloud to make plugins' calls on.
    can_call: bool = False
    retry_limit: int = 0

    def own_environment(self, row: resources.ResourceRow) -> ResourceRegistry | None:
        """The registry of the desired state ``row`` was made or last converged with."""
        own = rowkit.own_template(row, self.trav, self.stack)
        return self.envs.get(own) if own is not None else None

    def environment(self, row: resources.ResourceRow, action: str) -> ResourceRegistry | None:
        """Where ``row``'s type resolves for ``action``: as the one-item path's ``_row_plugin``."""
        if self.want is not None and rowkit.follows_definition(action, self.want, row.name):
            return self.want.environment.registry
        return self.own_environment(row)


@dataclasses.dataclass(frozen=True)
class BatchResult:
    results: list[Result]
    # Released by this batch, to publish after commit.
    ready: list[Ready]
    # Which items' successors those are, so a failed publish naks exactly them.
    released_by: list[int]


async def step_batch(ctx: WorkerContext, arrivals: list[Arrival]) -> BatchResult:
    results: list[Result] = [SLOW] * len(arrivals)
    jobs: list[_Job] = []
    for i, arrival in enumerate(arrivals):
        item = arrival.item
        try:
            key = NodeKey.parse(item.node)
            uuid.UUID(item.stack_id), uuid.UUID(item.traversal_id)
        except ValueError as exc:
            results[i] = Permanent(f"bad work item: {exc}")
            continue
        jobs.append(_Job(i, item, key, arrival.trace, answers=arrival.answers, answered=arrival.answered))
    ready: list[Ready] = []
    released_by: list[int] = []
    if not jobs:
        return BatchResult(results, ready, released_by)
    async with ctx.pool.acquire() as conn:
        held = await locks.try_lock_resources(conn, [j.key.resource_id for j in jobs])
        try:
            mine: list[_Job] = []
            taken: set[int] = set()
            for job in jobs:
                if job.key.resource_id not in held or job.key.resource_id in taken:
                    results[job.index] = Conflict(f"resource {job.key.resource_id} is busy with another step")
                else:
                    taken.add(job.key.resource_id)
                    mine.append(job)
            groups = await _load(ctx, conn, mine, results)
            await _decide(ctx, conn, groups, results)
            await _start(conn, groups, results)
            await _run_steps(ctx, groups, results)
            await _finish(conn, groups, results, ready, released_by, registry=ctx.registry,
                          resolve=ctx.outputs)
            for group in groups:
                if group.failure is not None:
                    failed_by, reason = group.failure
                    current = group.stack.current_traversal == group.trav.id
                    with failed_by.acting():
                        await stack_end.fail(conn, ctx.bus, group.stack, group.trav, reason,
                                             current=current, want=group.want, resolve=ctx.outputs)
        finally:
            await locks.unlock_resources(conn, sorted(held))
    return BatchResult(results, ready, released_by)


async def _load(ctx: WorkerContext, conn: Conn, jobs: list[_Job], results: list[Result]) -> list[_Group]:
    by_trav: dict[uuid.UUID, list[_Job]] = defaultdict(list)
    for job in jobs:
        by_trav[uuid.UUID(job.item.traversal_id)].append(job)
    travs = await traversals.get_many(conn, list(by_trav))
    stack_rows = await stacks.get_many(conn, list({t.stack_id for t in travs.values()}))
    rows = await resources.get_many(conn, [j.key.resource_id for j in jobs])
    groups: list[_Group] = []
    now = rowkit.now()
    for trav_id, group_jobs in by_trav.items():
        trav = travs.get(trav_id)
        stack = stack_rows.get(trav.stack_id) if trav is not None else None
        if trav is None or stack is None or str(stack.id) != group_jobs[0].item.stack_id:
            for job in group_jobs:
                results[job.index] = Permanent("stack or traversal no longer exists")
            continue
        if stack.current_traversal != trav.id or (trav.deadline is not None and now > trav.deadline):
            continue  # stale or timed out: the one-item path knows how to stop
        if trav.converge:
            continue  # each resource is observed first, one at a time
        nodes = await traversals.nodes(conn, trav.id, [j.item.node for j in group_jobs])
        live: list[_Job] = []
        again: list[tuple[_Job, list[str]]] = []
        gone: list[_Job] = []
        for job in group_jobs:
            node = nodes.get(job.item.node)
            if node is None and trav.finished_at is not None:
                results[job.index] = None  # a late redelivery: the traversal finished, its nodes swept
            elif node is None:
                results[job.index] = Permanent(f"no node {job.item.node} in traversal {trav.id}")
            elif node.done:  # redelivered: its successors are published again
                again.append((job, await traversals.ready_successors(conn, trav.id, job.item.node)))
            elif node.waiting_on > 0:
                results[job.index] = Retry(0.2, "predecessors not finished")
            else:
                job.successors = node.successors
                if job.key.resource_id in rows:
                    job.row = rows[job.key.resource_id]
                    live.append(job)
                else:
                    gone.append(job)  # forgotten by an earlier delivery: the node finishes
        update_ids = [j.key.resource_id for j in live if j.key.converges]
        replaced = await resources.replacements(conn, update_ids, trav.id) if update_ids else {}
        live = [j for j in live if j.key.resource_id not in replaced
                and not (j.row is not None and j.row.replaces is not None and not j.row.is_current)]
        entry = await ctx.cache.entry(conn, stack, trav.template_id) if trav.template_id is not None else None
        group = _Group(stack, trav, entry.desired if entry else None, live, finish=gone, again=again,
                       heavy=entry.heavy if entry else frozenset(), can_call=ctx.caller is not None,
                       retry_limit=ctx.retry_limit)
        # What a row is resolves through the environment it was made with.
        for template_id in {rowkit.own_template(j.row, trav, stack) for j in live if j.row is not None}:
            if template_id is not None:
                group.envs[template_id] = (await ctx.cache.get(conn, stack, template_id)).environment.registry
        group.jobs = await _without_hooks(conn, group)  # a node that may pause goes one at a time
        groups.append(group)
    return groups


async def _without_hooks(conn: Conn, group: _Group) -> list[_Job]:
    mode = group.trav.hook_mode
    if mode == hooks.HookMode.RUN:
        return group.jobs
    if mode == hooks.HookMode.STEP:
        return []
    envs = [group.want.environment.registry] if group.want is not None else list(group.envs.values())
    placed = await breakpoints.reaching(conn, group.stack.id)
    if not placed and not any(env.has_hooks() for env in envs):
        return group.jobs
    kept = []
    for job in group.jobs:
        assert job.row is not None
        # Hooks are the traversal's environment's, as the one-item path's gate reads them.
        env = group.want.environment.registry if group.want is not None else group.own_environment(job.row)
        if not hooks.may_pause(resource_name=job.row.name, resource_type=job.row.type,
                               env_hooks=env.hooks_for(job.row.name) if env is not None else (),
                               breakpoints=placed, mode=hooks.HookMode.NORMAL):
            kept.append(job)
    return kept


async def _decide(ctx: WorkerContext, conn: Conn, groups: list[_Group], results: list[Result]) -> None:
    for group in groups:
        want, trav = group.want, group.trav
        converging = trav.action in status.CONVERGING
        required: set[str] = set()
        if want is not None and converging:
            for job in group.jobs:
                assert job.row is not None
                if job.key.converges and job.row.name in want.definition.resources:
                    required |= want.definition.required(job.row.name)
        current = await resources.current_by_names(conn, group.stack.id, required) if required else {}
        resolver = None
        if want is not None:
            data = StaticResourceData({n: r.reference for n, r in current.items()},
                                      {n: r.attributes for n, r in current.items()})
            resolver = StackResolver(want.definition, data)
        group.jobs = [job for job in group.jobs if _decide_job(ctx, group, job, resolver, results)]


def _decide_job(ctx: WorkerContext, group: _Group, job: _Job, resolver: StackResolver | None,
                results: list[Result]) -> bool:
    """Whether the batch steps this job (else the one-item path, or ``results``, has it)."""
    want, trav, row = group.want, group.trav, job.row
    assert row is not None
    if row.status == Status.IN_PROGRESS and row.traversal_id != trav.id:
        return False  # an older traversal's action: waited for, or taken over, one at a time
    in_template = want is not None and row.name in want.definition.resources
    new_type: str | None = None
    plugin: ResourceType | None = None
    external_id: str | None = None
    if job.key.converges and in_template and trav.action in status.CONVERGING:
        assert want is not None and resolver is not None
        if row.name in group.heavy:
            return False  # resolved in the evaluation pool, on the one-item path
        new_type = want.definition.resources[row.name].type
        try:
            plugin = ctx.registry.implementing(new_type, resource_name=row.name,
                                               environment=want.environment.registry)
            external_id = resolver.external_id(row.name)
            job.props = dict(plugin.validate(resolver.properties(row.name), resource_name=row.name))
        except Exception:  # the one-item path fails the resource with Heat's reason
            return False
    if plugin is not None and row.action != Action.INIT and new_type != row.type:
        return False  # renamed: the one-item path compares implementations and records the name
    if plugin is not None and restores_replaced(trav.action, plugin.prepares_replace):
        return False  # the one-item path looks for a failed replacement that took from it
    same = None if plugin is None else type(plugin) is ctx.registry.implementation(
        row.type, resource_name=row.name, environment=group.own_environment(row))
    decision = rowkit.decision(
        job.key.kind, trav, row.state(), plugin, in_template=in_template, new_type=new_type, props=job.props,
        same=same, external_id=external_id,
        restricted=want.environment.registry.restricted_actions(row.name) if want is not None else ())
    if decision.verb == Verb.WAIT:
        results[job.index] = Retry(0.5, f"{row.name}: {decision.action} of an earlier traversal"
                                        " still under way")
        return False
    if decision.verb == Verb.CONTINUE and (
            row.external_id is not None or row.data.get(rowkit.NAMED_STEP_KEY)):
        return False  # an adopted resource's check, a pause at a named step: one at a time
    if (decision.verb.action is not None and decision.verb not in ALONE) or decision.verb == Verb.CONTINUE:
        job.action = decision.verb.action or decision.action
        job.first = decision.verb != Verb.CONTINUE
        try:
            job.plugin = ctx.registry.implementing(row.type, resource_name=row.name,
                                                   environment=group.environment(row, job.action))
        except KeyError:
            return False  # one item's unknown type must not fail the batch
        if job.plugin.reaches_beyond_row:
            return False
        if job.props is None:
            if in_template and job.action in (Action.CREATE, Action.UPDATE):
                return False
            defaults = {k: s.default for k, s in job.plugin.properties_schema.items()}
            job.props = {**defaults, **(row.properties or {})}
        if job.plugin.software_reads(job.props, row.physical_id) is not None:
            return False  # it reads software configs: the one-item path reads them
    elif decision.verb not in (Verb.DONE, Verb.NOOP, Verb.FORGET, Verb.RETAIN):
        return False  # replace, refuse: step by step on the one-item path
    job.decision = decision
    return True


async def _start(conn: Conn, groups: list[_Group], results: list[Result]) -> None:
    """Record every first step as under way (with its event) before any plugin runs."""
    starting = [(g, j) for g in groups for j in g.jobs if j.action and j.first]
    if not starting:
        return
    now = rowkit.now()
    async with conn.transaction():
        writes: list[writer.Write] = []
        for group in groups:
            writes += await writer.with_requires(conn, group.stack.id, group.want, [
                _write(g, j, outcome.started(j.row, j.action, g.trav.id, g.trav.template_id, now))
                for g, j in starting if g is group and j.row is not None])
        written = await writer.write(conn, writes)
        for _, job in starting:
            fresh = written.get(job.key.resource_id)
            if fresh is None:
                results[job.index] = Conflict("resource row changed under this step")
                job.decision = None
            else:
                job.row = fresh
    for group in groups:
        group.jobs = [j for j in group.jobs if j.decision is not None]


async def _run_steps(ctx: WorkerContext, groups: list[_Group], results: list[Result]) -> None:
    for group in groups:
        kept_jobs: list[_Job] = []
        for job in group.jobs:
            if not job.action:
                kept_jobs.append(job)
                continue
            row, plugin = job.row, job.plugin
            assert row is not None and plugin is not None and job.props is not None
            step_ctx = rowkit.step_context(group.stack, row, job.props, ctx.rng,
                                           ready_timeout=ctx.ready_timeout, api_url=ctx.api_url)
            kept = pending.of(row.data) if not job.first else None
            if kept is not None and not kept.attempted:
                # A Call's delay is over: marked attempted (committed) before the calls are made.
                job.direct = Outcome({"data": pending.attempting(row.data)}, calls=kept.to_make)
                kept_jobs.append(job)
                continue
            if kept is not None:
                got = pending.next_step(row.data, row.version, job.answers, job.answered)
                if isinstance(got, tuple):  # the cloud asked to be tried again later
                    job.direct = Outcome({"data": got[0]}, retry=got[1],
                                         about=f"{job.action} of {row.name}: the cloud is to be tried again")
                    kept_jobs.append(job)
                    continue
                step_ctx = dataclasses.replace(step_ctx, answers=got)
            try:
                starts = job.first or create_retry.restarts(row.data, job.action)
                job.outcome = (plugin.start(Action(job.action), step_ctx) if starts
                               else plugin.check(Action(job.action), step_ctx))
            except Exception as exc:  # redelivered, it continues with the plugin's check
                results[job.index] = exc
                continue
            kept_jobs.append(job)
        group.jobs = kept_jobs


async def _finish(conn: Conn, groups: list[_Group], results: list[Result],
                  ready: list[Ready], released_by: list[int], *, registry: Registry,
                  resolve: OutputsOf) -> None:
    async with conn.transaction():
        for group in groups:
            await _finish_group(conn, group, results)
        # Every traversal's nodes in one order, and stacks settled only after: every
        # worker's transaction takes these rows' locks in the same order (no deadlock).
        outcomes = await traversals.finish_many(conn, {g.trav.id: [j.item.node for j in g.finish]
                                                       for g in groups})
        ended: list[_Group] = []
        for group in groups:
            for job, nodes in group.again:
                ready.extend(Ready(str(group.stack.id), str(group.trav.id), n, job.index) for n in nodes)
                results[job.index] = None
                released_by.append(job.index)
            if group.trav.id not in outcomes:
                continue
            finished, now_ready, remaining = outcomes[group.trav.id]
            by = _releasers(group.finish, set(finished))
            stack_id, trav_id = str(group.stack.id), str(group.trav.id)
            ready.extend(Ready(stack_id, trav_id, node, by.get(node, group.finish[0].index))
                         for node in now_ready)
            for job in group.finish:
                results[job.index] = None
                released_by.append(job.index)
            if finished and remaining == 0:
                ended.append(group)
        for group in ended:
            with group.finish[-1].acting():
                await stack_end.complete(conn, group.stack, group.trav, group.want, registry,
                                         resolve=resolve)


def _releasers(finish: list[_Job], finished: set[str]) -> dict[str, int]:
    """Each successor, and the item (its first finished predecessor in this batch) that released it."""
    by: dict[str, int] = {}
    for job in finish:
        if job.item.node in finished:
            for successor in job.successors:
                by.setdefault(successor, job.index)
    return by


async def _finish_group(conn: Conn, group: _Group, results: list[Result]) -> None:
    """Every job's outcome written in one round, then read back into results and releases."""
    jobs = [j for j in group.jobs if j.row is not None and j.decision is not None]
    writes = await writer.with_requires(conn, group.stack.id, group.want,
                                        [_write(group, j, _outcome(group, j)) for j in jobs])
    written = await writer.write(conn, writes)
    for job, w in zip(jobs, writes, strict=True):
        out, fresh = w.outcome, written[w.row.id]
        if fresh is None:
            results[job.index] = Conflict("resource row changed under this step")
        elif out.failure is not None:
            results[job.index] = None
            if group.failure is None:
                group.failure = (job, out.failure)
        elif out.finished:
            group.finish.append(job)
        elif out.retry is not None:
            results[job.index] = Retry(out.retry, out.about)
        elif out.calls:
            results[job.index] = Calls(out.calls, fresh, group.stack.project)


def _outcome(group: _Group, job: _Job) -> Outcome:
    """What the job's decision, and its plugin's answer, do to its row."""
    row, verb = job.row, job.decision.verb if job.decision is not None else None
    assert row is not None
    if verb == Verb.NOOP and job.key.converges and group.trav.template_id is not None:
        return outcome.settled({"template_id": group.trav.template_id,
                                "deletion_policy": rowkit.deletion_policy(group.want, row.name)})
    if verb in (Verb.DONE, Verb.NOOP):
        return outcome.settled()
    if verb in (Verb.FORGET, Verb.RETAIN):
        return outcome.settled(removed=True)
    if job.direct is not None:
        return job.direct
    assert job.plugin is not None and job.props is not None and job.outcome is not None
    assert not isinstance(job.outcome, Nest | Store)  # such types reach beyond their row: stepped alone
    return outcome.of_step(row, job.action, job.outcome, job.plugin, props=job.props,
                           traversal_id=group.trav.id, template_id=group.trav.template_id,
                           deletion_policy=rowkit.deletion_policy(group.want, row.name),
                           can_call=group.can_call, retry_limit=group.retry_limit)


def _write(group: _Group, job: _Job, out: Outcome) -> writer.Write:
    """``out`` on ``job``'s row, its event in the item's trace."""
    assert job.row is not None
    return writer.Write(group.stack, group.trav.id, job.row, job.action, out, trace=job.stored())
