"""Turning a plan request into a traversal: the planner's one job.

The stack is locked for the length of one transaction (milliseconds, never
during execution): read the desired state and the rows, build the graph
(pure), write the traversal and its nodes, make it current, record the
"started" event. The first wave is published after commit; a redelivered
request finds its traversal by request id and only publishes again.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import orjson

from libs import resource_refresh, stack_snapshots
from libs.db import Conn, breakpoints, events, locks, resources, snapshots, stacks, templates, traversals
from libs.db import settling as settled_rows
from libs.engine import desired, plan, rollback_rows, status, unchanged
from libs.engine.hooks import HookMode
from libs.engine.status import Action, Status
from libs.engine.step import RowState
from libs.errors import Permanent, describe
from libs.messaging.bus import Outgoing
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import PlanRequest, WorkItem
from libs.resources.nested import ADOPT_NESTED_KEY, NestedStackType
from libs.resources.registry import Registry, default_registry
from libs.runtime import Runtime
from libs.telemetry import logs
from libs.template import attribute_store
from libs.template.environment import Environment
from libs.template.errors import TemplateError
from libs.template.resolution import StaticResourceData
from services.planner import settling

log = logs.logger("planner")
_DEFAULT_REGISTRY = default_registry()


async def _locked_stack(conn: Conn, stack_id: uuid.UUID) -> stacks.StackRow | None:
    """The stack, locked to the transaction (one plan at a time); None once it is deleted."""
    await locks.lock_stack_for_transaction(conn, stack_id)
    stack = await stacks.get(conn, stack_id)
    return None if stack is None or stack.deleted_at is not None else stack


async def handle_plan(rt: Runtime, request: PlanRequest, _delivery: Delivery, *,
                      registry: Registry | None = None) -> None:
    stack_id = uuid.UUID(request.stack_id)
    with logs.log_context(stack_id=request.stack_id):
        async with rt.pool.acquire() as conn, conn.transaction():
            stack = await _locked_stack(conn, stack_id)
            if stack is None:
                raise Permanent(f"stack {stack_id} does not exist")
            existing = await traversals.by_request(conn, stack_id, request.request_id)
            if existing is not None:
                traversal_id = existing
                ready = await traversals.ready_nodes(conn, existing)
            elif request.action != stack.action:
                # A newer desired state (each is recorded with its request's action) came after
                # this request: planning it late would undo that one (an update after a delete).
                log.info("not planning an outdated %s request: the stack's action is now %s",
                         request.action, stack.action)
                return
            else:
                traversal_id, ready = await _plan(conn, stack, request, registry or _DEFAULT_REGISTRY)
        with logs.log_context(traversal_id=str(traversal_id)):
            subject = rt.names.work(request.stack_id)
            for start in range(0, len(ready), STILL_CURRENT_EVERY):
                if start and not await _still_current(rt, stack_id, traversal_id):
                    log.info("stopped publishing %s after %d of %d node(s): the traversal was superseded",
                             request.action, start, len(ready))
                    return
                items = [WorkItem(stack_id=request.stack_id, traversal_id=str(traversal_id), node=node)
                         for node in ready[start:start + STILL_CURRENT_EVERY]]
                failed = [e for e in await rt.bus.publish_all([Outgoing(subject, i, i.msg_id) for i in items])
                          if e is not None]
                if failed:  # redelivered, the request finds its traversal and publishes the wave again
                    raise failed[0]
            log.info("planned %s: %d node(s) ready", request.action, len(ready))


# A big first wave (a group of 10^5 members) takes a while to publish; a delete or a newer
# update meanwhile makes the rest of it stale, so the planner looks again between chunks this big
# (each chunk's acks are awaited together).
STILL_CURRENT_EVERY = 256


async def _still_current(rt: Runtime, stack_id: uuid.UUID, traversal_id: uuid.UUID) -> bool:
    async with rt.pool.acquire() as conn:
        stack = await stacks.get(conn, stack_id)
    return stack is not None and stack.current_traversal == traversal_id


async def give_up_plan(rt: Runtime, request: PlanRequest, error: BaseException) -> None:
    """Planning this request failed the same way every time: the stack's action fails, with the error.

    Called once the consumer stops retrying (``libs.errors.GIVE_UP_AFTER``), so
    that the stack (and a parent waiting on it) ends instead of staying
    ``*_IN_PROGRESS`` for ever.
    """
    stack_id = uuid.UUID(request.stack_id)
    with logs.log_context(stack_id=request.stack_id):
        async with rt.pool.acquire() as conn, conn.transaction():
            stack = await _locked_stack(conn, stack_id)
            if stack is None:
                return
            if await traversals.by_request(conn, stack_id, request.request_id) is not None:
                return  # planned after all: whatever failed came after
            if request.action != stack.action:
                return  # outdated: a newer request plans the stack
            await _fail_now(conn, stack, uuid.uuid4(), Action(request.action), request=request,
                            reason=describe(error))
        log.error("gave up planning %s: %s", request.action, describe(error))


async def _back_to_best(conn: Conn, stack_id: uuid.UUID, rows: list[resources.ResourceRow],
                        template_id: uuid.UUID) -> list[resources.ResourceRow]:
    """The stack's rows once a rollback made each name's best row current (Heat's best existing
    resource: the one a completed replacement replaced, where it is still there)."""
    replaced = {r.replaces for r in rows if r.replaces is not None}
    chosen = rollback_rows.swaps((rollback_rows.Candidate(
        r.id, r.name, r.is_current, r.action, r.status, str(r.template_id) if r.template_id else None,
        r.id in replaced) for r in rows), str(template_id))
    if not chosen:
        return rows
    for current, best in chosen:
        await resources.promote(conn, current, best)
    return await resources.for_stack(conn, stack_id)


async def _plan(conn: Conn, stack: stacks.StackRow, request: PlanRequest, registry: Registry
                ) -> tuple[uuid.UUID, list[str]]:
    action = Action(request.action)
    traversal_id = uuid.uuid4()
    template_id = None if action == Action.DELETE else stack.template_id
    if action == Action.UPDATE and not request.converge and await settling.kept_converged(
            conn, stack, registry):
        return traversal_id, await _traverse(conn, stack, request, traversal_id, template_id=template_id,
                                             graph=plan.TraversalGraph({}), outputs=[])
    standing: list[settled_rows.Standing] | None = None
    if action == Action.DELETE:
        rows: list[resources.ResourceRow] = []
        plan_rows = await _delete_rows(conn, stack.id)
    elif action == Action.UPDATE and not request.converge and template_id is not None:
        # Read whole below, but for the rows left alone as written (a group's 10^5 members).
        standing = await settled_rows.standings(conn, stack.id)
        rows = []
    else:
        rows = await resources.for_stack(conn, stack.id)
    if action == Action.ROLLBACK and template_id is not None:
        rows = await _back_to_best(conn, stack.id, rows, template_id)
    outline: Sequence[resources.Outlined] = standing if standing is not None else rows
    comparing = template_id is not None and bool(outline) and not request.converge
    wanted = _Wanted(None, {})
    if template_id is not None and action in status.CONVERGING:
        try:
            wanted = await _wanted(conn, stack, template_id, outline, comparing=comparing, registry=registry)
        except TemplateError as exc:
            await _fail_now(conn, stack, traversal_id, action, request=request, reason=str(exc))
            return traversal_id, []
    want, requires, held, kept = wanted.want, wanted.requires, wanted.held, wanted.kept
    if standing is not None:
        rows = await _whole_rows(conn, stack.id, standing, kept, requires)
    settled: frozenset[int] = frozenset()
    if want is not None and template_id is not None and comparing:
        settled = await _settle_unchanged(conn, want, action, rows, template_id=template_id,
                                          registry=registry, held=held, kept=kept)
    if action != Action.DELETE:
        kept_ids = frozenset(kept.values())
        plan_rows = [plan.Row(r.id, r.name, r.is_current, tuple(r.requires)) for r in outline
                     if r.id not in kept_ids]
    added = plan.rows_to_add(list(requires), plan_rows)
    new_ids = await resources.insert_new(conn, stack.id, [(n, want.definition.resources[n].type)
                                                          for n in added] if want is not None else [])
    if new_ids and (request.snapshot_id or action == Action.ADOPT):
        await _give_back(conn, stack, request, new_ids)
    plan_rows += [plan.Row(rid, name, True) for name, rid in new_ids.items()]
    graph = plan.build(action, requires, plan_rows, frozenset(new_ids.values()), settled=settled)
    outputs = None
    if not graph.nodes and action != Action.DELETE:
        outputs = [] if want is None else await resource_refresh.outputs_now(conn, stack.id, want)
    return traversal_id, await _traverse(conn, stack, request, traversal_id, template_id=template_id,
                                         graph=graph, outputs=outputs)


@dataclasses.dataclass(frozen=True)
class _Wanted:
    """The desired state a traversal converges to, and what of it an update settles as written."""

    want: desired.Desired | None
    requires: dict[str, AbstractSet[str]]
    # What may pause (each keeps its node, unchanged or not).
    held: frozenset[str] = frozenset()
    # Rows settled as written (name -> id): they need no node, and so no place in the graph.
    kept: Mapping[str, int] = dataclasses.field(default_factory=dict)


async def _wanted(conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID,
                  outline: Sequence[resources.Outlined], *, comparing: bool, registry: Registry) -> _Wanted:
    """The stack's desired state, loaded (raises TemplateError), and, for an update comparing it with
    the rows, those it leaves alone as written, settled now."""
    raw = await templates.get(conn, template_id)
    want = desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                        stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)
    if not comparing:
        return _Wanted(want, want.requires())
    held = await _held(conn, stack.id, want, outline)
    # Found before the rest is parsed: these need not be.
    alike = await settling.written_alike(conn, raw, outline, exclude=held, env=want.environment.registry,
                                         registry=registry)
    requires = want.requires(alike.names if alike is not None else frozenset())
    if alike is None:
        return _Wanted(want, requires, held)
    kept = await settling.settle_alike(conn, stack.id, alike, outline, held=held,
                                       read=want.definition.attribute_reads, template_id=template_id)
    for name in kept:
        del requires[name]
    return _Wanted(want, requires, held, kept)


async def _traverse(conn: Conn, stack: stacks.StackRow, request: PlanRequest, traversal_id: uuid.UUID, *,
                    template_id: uuid.UUID | None, graph: plan.TraversalGraph,
                    outputs: list[dict[str, Any]] | None) -> list[str]:
    """Write the traversal and make it current; one with no nodes completes now, with ``outputs``
    (None: those the stack has). Its first wave."""
    action = Action(request.action)
    deadline = None
    if stack.timeout_mins:
        deadline = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=stack.timeout_mins)
    await traversals.insert(conn, traversal_id=traversal_id, stack_id=stack.id, action=action,
                            template_id=template_id, graph=graph, deadline=deadline,
                            request_id=request.request_id, converge=request.converge,
                            snapshot_id=uuid.UUID(request.snapshot_id) if request.snapshot_id else None,
                            hook_mode=await traversals.parent_hook_mode(conn, stack.id) if stack.parent_id
                            else HookMode.NORMAL)
    reason = status.stack_started(action)
    await stacks.begin_traversal(conn, stack.id, traversal_id, action, reason)
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=Status.IN_PROGRESS, reason=reason, traversal_id=traversal_id)
    if not graph.nodes:
        await _complete_empty(conn, stack, traversal_id, action, outputs)
    return graph.ready()


async def _delete_rows(conn: Conn, stack_id: uuid.UUID) -> list[plan.Row]:
    """A delete's rows, less those never started, removed now: they have nothing to delete.

    A big group deleted while it is being made has most of its members in this
    state; a node each would queue as much work as the create it stops. Heat's
    delete of a never-created resource does nothing and writes no event either.
    """
    outlines = await resources.outlines(conn, stack_id)
    never = [o.id for o in outlines if o.never_made]
    if never:
        await resources.remove_many(conn, never)
    return [plan.Row(o.id, o.name, o.is_current, o.requires) for o in outlines if not o.never_made]


async def _give_back(conn: Conn, stack: stacks.StackRow, request: PlanRequest,
                     new_ids: dict[str, int]) -> None:
    """Rows made for a restore or an adopt get the physical id and data the resource had."""
    recorded: dict[str, Any] | None = None
    if request.snapshot_id:
        snapshot = await snapshots.get(conn, stack.id, uuid.UUID(request.snapshot_id))
        recorded = snapshot.data if snapshot is not None else None
    else:
        recorded = await stacks.adopt_data(conn, stack.id)
    if not isinstance(recorded, dict):
        return
    adopting = request.action == Action.ADOPT
    for name, (physical_id, data) in stack_snapshots.recorded_resources(recorded, list(new_ids)).items():
        nested = stack_snapshots.nested_data(recorded["resources"][name]) if adopting else None
        given, given_id = data, physical_id
        if nested is not None:
            # The abandoned nested stack is gone: the resource makes it again, adopting
            # what it held (Heat's StackResource.handle_adopt).
            given, given_id = {**data, ADOPT_NESTED_KEY: orjson.dumps(nested).decode()}, None
        # A restore brings back data only; an adopt takes over the physical resource too.
        await resources.give_back(conn, new_ids[name], given, adopt=adopting, physical_id=given_id)


async def _held(conn: Conn, stack_id: uuid.UUID, want: desired.Desired,
                rows: Sequence[resources.Outlined]) -> frozenset[str]:
    """The resources a pre-update hook or breakpoint may pause: Heat pauses unchanged ones too,
    so each keeps its node."""
    env = want.environment.registry
    placed = await breakpoints.reaching(conn, stack_id)
    return frozenset(r.name for r in rows if "pre-update" in env.hooks_for(r.name) or any(
        p.breakpoint.matches((*p.prefix, r.name), r.type, "pre-update") for p in placed))


def _states(rows: Sequence[resources.Outlined]) -> dict[str, RowState]:
    """What ``decide`` needs of each current row (its properties only if ``rows`` are whole)."""
    unmade = resources.unmade_replacements(rows)
    return {r.name: _state(r, unmade) for r in rows if r.is_current}


async def _whole_rows(conn: Conn, stack_id: uuid.UUID, standing: list[settled_rows.Standing],
                      kept: Mapping[str, int], requires: Mapping[str, AbstractSet[str]]
                      ) -> list[resources.ResourceRow]:
    """The rows an update compares one by one, read whole: all but those ``kept``, and those
    of the kept that the others read (their references and attributes resolve the others)."""
    if not kept:
        return await resources.for_stack(conn, stack_id)
    read = {n for name, needs in requires.items() if name not in kept for n in needs}
    kept_ids = frozenset(kept.values())
    ids = [r.id for r in standing if r.id not in kept_ids or r.name in read]
    return sorted((await resources.get_many(conn, ids)).values(), key=lambda r: r.id)


async def _settle_unchanged(conn: Conn, want: desired.Desired, action: Action,
                            rows: list[resources.ResourceRow], *, template_id: uuid.UUID, registry: Registry,
                            held: frozenset[str], kept: Mapping[str, int]) -> frozenset[int]:
    """Record the new template on every row the update leaves alone; their ids need no node.

    ``kept``: those already settled (written as they were, requiring nothing), not compared
    again; ``rows`` holds the rest (whole), and those of the kept the rest read.
    """
    current = {r.name: r for r in rows if r.is_current}
    answered = _answered_again(want, current, registry)
    data = StaticResourceData({n: r.reference for n, r in current.items()},
                              {n: answered.get(n, r.attributes) for n, r in current.items()})
    env = want.environment.registry

    def rules(resource_name: str, type_name: str) -> unchanged.TypeRules:
        plugin = registry.implementing(type_name, resource_name=resource_name, environment=env)
        return unchanged.TypeRules(plugin.never_updates, plugin.needs_replace,
                                   lambda values, name: plugin.validate(values, resource_name=name),
                                   always_updates=plugin.always_updates, implementation=type(plugin),
                                   prepares_replace=plugin.prepares_replace)

    # What each row's type meant in the environment it was last converged with.
    old_ids = {r.template_id for r in current.values() if r.template_id not in (None, template_id)}
    old_envs = {tid: Environment.from_dict(raw).registry
                for tid, raw in (await templates.environments(conn, list(old_ids))).items()}

    def implementation_of(row: RowState) -> object:
        was = old_envs.get(uuid.UUID(row.template_id)) if row.template_id else None
        return registry.implementation(row.type, resource_name=row.name,
                                       environment=env if was is None else was)

    def changes(name: str) -> dict[str, Any]:
        new = want.definition.resources[name]
        # The type too: it may be another name of the same implementation.
        return {"template_id": template_id, "deletion_policy": new.deletion_policy, "type": new.type,
                **({"attributes": answered[name]} if name in answered else {})}

    unmade = resources.unmade_replacements(rows)
    states = _states(rows)
    lost: frozenset[str] = held
    for _ in range(2):
        names = unchanged.unchanged(want.definition, action, states, data, rules, exclude=lost,
                                    implementation_of=implementation_of, already=kept)
        written = await resources.write_many(conn, [(current[n], changes(n)) for n in names if n not in lost],
                                             touch=False)
        missed = {n for n in names if current[n].id not in written and n not in lost}
        if not missed:
            return frozenset(current[n].id for n in names) | frozenset(kept.values())
        # A stale traversal's step wrote one of them meanwhile: plan it, and what reads it, as nodes.
        lost |= missed
        current.update({n: r for n, r in ((r.name, r) for r in written.values())})
        states = {n: _state(r, unmade) for n, r in current.items()}
    return frozenset()


def _state(row: resources.Outlined, unmade: Mapping[int, resources.Outlined]) -> RowState:
    """What ``decide`` needs of a current row, its failed or unfinished replacement's status with it."""
    replacement = unmade.get(row.id)
    state = row.state()
    return state if replacement is None else dataclasses.replace(state, replacement=replacement.status)


def _answered_again(want: desired.Desired, current: dict[str, resources.ResourceRow],
                    registry: Registry) -> dict[str, dict[str, Any]]:
    """Attributes of completed resources that answer reads themselves, answered again where the
    new template reads them in ways they have not answered yet (an unchanged resource runs no step).

    Reads that need the nested stack's resources wait for the resource's next step.
    """
    found: dict[str, dict[str, Any]] = {}
    for name, reads in want.definition.attribute_reads.items():
        row = current.get(name)
        if row is None or row.status != Status.COMPLETE or name not in want.definition.resources:
            continue
        try:
            plugin = registry.implementing(want.definition.resources[name].type, resource_name=name,
                                           environment=want.environment.registry)
        except KeyError:
            continue
        kept = row.attributes.get(attribute_store.READS) or {}
        if not plugin.answers_reads or all(attribute_store.read_key(n, p) in kept for n, *p in reads) or (
                isinstance(plugin, NestedStackType) and plugin.nested_reads(reads)):
            continue
        found[name] = plugin.stored_attributes(reads, row.physical_id, row.data, row.properties or {},
                                               resource_name=name)
    return found


async def _complete_empty(conn: Conn, stack: stacks.StackRow, traversal_id: uuid.UUID, action: Action,
                          outputs: list[dict[str, Any]] | None) -> None:
    reason = status.stack_completed(action)
    await stacks.settle(conn, stack.id, traversal_id, status=Status.COMPLETE, reason=reason,
                        outputs=outputs,
                        completed_template=action != Action.DELETE, deleted=action == Action.DELETE)
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=Status.COMPLETE, reason=reason, traversal_id=traversal_id)


async def _fail_now(conn: Conn, stack: stacks.StackRow, traversal_id: uuid.UUID, action: Action, *,
                    request: PlanRequest, reason: str) -> None:
    graph = plan.TraversalGraph({})
    await traversals.insert(conn, traversal_id=traversal_id, stack_id=stack.id, action=action,
                            template_id=stack.template_id, graph=graph, deadline=None,
                            request_id=request.request_id)
    await stacks.begin_traversal(conn, stack.id, traversal_id, action, reason)
    await stacks.settle(conn, stack.id, traversal_id, status=Status.FAILED, reason=reason)
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=Status.FAILED, reason=reason, traversal_id=traversal_id)
