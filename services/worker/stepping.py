"""Stepping one node alone: its plugin's step, nested stacks, named steps, the writes of its outcome.

The part of :class:`services.worker.node.Node` that carries a decision out once
made; every row write goes through the one writer (:mod:`services.worker.writer`)
with the one outcome (:mod:`services.worker.outcome`) the batch uses too.
"""
from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from libs import plan_requests
from libs.cloud.calls import Answers
from libs.db import Conn, events, resources, stack_users, stacks, traversals
from libs.db.pool import Held
from libs.engine import create_retry, desired, status
from libs.engine import hooks as rules
from libs.engine.keys import NodeKey, NodeKind
from libs.engine.status import Action, Status
from libs.engine.step import Refusal, preempted_reason
from libs.errors import Conflict, Retry, is_transient
from libs.evaluation_pool import EvaluationCrashed, EvaluationTimeout
from libs.messaging.payloads import HookNotice, PlanRequest, WorkItem
from libs.resources import nesting
from libs.resources.base import ResourceType
from libs.resources.nested import NestedStackType
from libs.resources.software_config import SoftwareType
from libs.resources.steps import Call, Done, Failed, KeepType, Nest, NestedReads, StepContext, Store, Wait
from libs.telemetry import logs
from libs.template.errors import StackValidationFailed, TemplateError
from libs.template.registry import ResourceRegistry
from libs.template.resolution import StackResolver, StaticResourceData
from services.worker import children, evaluation, outcome, pending, rows, software, stack_end, writer
from services.worker.context import WorkerContext
from services.worker.hook_gate import Gate
from services.worker.outcome import Calls, Outcome

log = logs.logger("worker")
NAMED_STEP_KEY = rows.NAMED_STEP_KEY



class Stepping:
    """One delivery of one node, as far as it steps and writes (``Node`` decides)."""

    stack: stacks.StackRow
    trav: traversals.TraversalRow
    current: bool
    want: desired.Desired | None
    gate: Gate

    def __init__(self, ctx: WorkerContext, conn: Conn, item: WorkItem, key: NodeKey, *,
                 answers: Answers | None = None, answered: int | None = None) -> None:
        self.s = ctx
        self.conn = conn
        self.item = item
        self.rid = key.resource_id
        self.kind = key.kind
        # The answers to calls made since the last look: those kept in the row at version
        # ``answered`` (written with them marked attempted), else the observe call's (None).
        self.answers = answers
        self.answered = answered
        # Calls this step asked for, to make once its lock and connection are let go.
        self.calls: Calls | None = None
        self.stack_id = uuid.UUID(item.stack_id)
        self.traversal_id = uuid.UUID(item.traversal_id)
        self.env: ResourceRegistry | None = None
        self.own_env: ResourceRegistry | None = None
        # An update with ``converge``: the applied properties with what the cloud shows laid over
        # (Heat's before_props with the live state), which the update's first step starts from.
        self.live: dict[str, Any] | None = None

    @property
    def notices(self) -> list[HookNotice]:
        """The hook notices this delivery made, to publish once it is committed."""
        gate: Gate | None = getattr(self, "gate", None)  # none before the stack was loaded
        return gate.notices if gate is not None else []

    async def properties(self, name: str, plugin: ResourceType) -> dict[str, Any]:
        assert self.want is not None
        definition = self.want.definition
        required = definition.required(name)
        current = await resources.current_by_names(self.conn, self.stack_id, required)
        references = {n: r.reference for n, r in current.items()}
        attributes = {n: r.attributes for n, r in current.items()}
        assert self.trav.template_id is not None
        entry = await self.s.cache.entry(self.conn, self.stack, self.trav.template_id)
        if name in entry.heavy and entry.source is not None:
            try:
                resolved = await self.s.evaluation.on_behalf_of(self.stack.project).run(
                    evaluation.properties, entry.source, name, references, attributes)
            except (EvaluationTimeout, EvaluationCrashed) as exc:
                # Not retried: the same evaluation would overrun again. The resource fails, naming it.
                raise StackValidationFailed(str(exc), ("resources", name, "properties")) from None
        else:
            resolved = StackResolver(definition, StaticResourceData(references, attributes)).properties(name)
        return dict(plugin.validate(resolved, resource_name=name))
    # ---- stepping -------------------------------------------------------------
    async def step(self, row: resources.ResourceRow, action: str, *, first: bool,
                   props: dict[str, Any] | None = None, changed: tuple[str, ...] = (),
                   propagate: bool = True, external_id: str | None = None,
                   renamed: Mapping[str, str] | None = None, preempts: str = "", restores: bool = False
                   ) -> list[str]:
        cancelled: str | None = None
        if first:
            # A resource taken over keeps the id it was given from its first step on.
            taken = {"external_id": external_id} if external_id is not None else {}
            async with self.conn.transaction():  # the state and its events, or neither
                if preempts:
                    cancelled = await self._preempt(row, preempts)
                row = await self._begin(row, action, outcome.started(
                    row, action, self.traversal_id, self.trav.template_id, rows.now(),
                    data=pending.without(rows.merged(row.data, {NAMED_STEP_KEY: None})),
                    **taken, **(renamed or {})))
        if cancelled is not None:
            await software.push(self.conn, self.s.bus, self.stack.project, cancelled)
        # After the first write: a renamed type is known by its new name.
        plugin = self._row_plugin(row, action)
        if props is None:
            if self.want is not None and row.name in self.want.definition.resources and action in (
                    Action.CREATE, Action.UPDATE):
                props = await self.properties(row.name, plugin)
            else:
                # Deleting, suspending...: what was applied, over the schema's defaults
                # (a row that failed before its first write has nothing recorded).
                defaults = {k: s.default for k, s in plugin.properties_schema.items()}
                props = {**defaults, **(row.properties or {})}
        if action == Action.ADOPT and row.external_id is not None:
            # Nothing is made: the given id becomes the resource's own (Heat's handle_adopt).
            return await self.completed(row, plugin, action, props=props,
                                        result=Done(physical_id=row.external_id), propagate=propagate)
        # The first step of a replacement's create, or of a rollback's update that restores, is
        # given the other row of the replacement.
        ctx = (await rows.with_replaced(self.conn, row, self._context(row, props), restores=restores)
               if first and plugin.prepares_replace and (action == Action.CREATE or restores)
               else self._context(row, props))
        if plugin.nests:
            # A delete answers nothing: it reads no nested resource.
            reads = (plugin.nested_reads(self._reads(row.name), whole=self._wholly_read(row.name))
                     if isinstance(plugin, NestedStackType) and action != Action.DELETE else NestedReads())
            child = await children.current(self.conn, self.stack, row, rows.short_id(row.id), reads,
                                           registry=self.s.registry)
            if child is not None and row.physical_id != child.id and not child.deleted:
                # Made by a step that died before it could record the child.
                found = await self._write(row, physical_id=child.id)
                if found is None:
                    raise Conflict("resource row changed under this step")
                row = found
            ctx = dataclasses.replace(self._context(row, props), child=child)
            if self.want is not None and row.name in self.want.definition.resources:
                policy = StackResolver(self.want.definition, StaticResourceData()).update_policy(row.name)
                ctx = dataclasses.replace(ctx, update_policy=policy)
        ctx = await self._beyond_row(row, plugin, props, ctx)
        if not first and row.data.get(NAMED_STEP_KEY):
            passed = await self._past_named_step(row, action)
            if passed is None:
                return []
            row, ctx = passed, dataclasses.replace(ctx, data=rows.plugin_data(passed.data))
        if not first and pending.of(row.data) is not None:
            answered = await self._answered(row, action, ctx)
            if answered is None:
                return []
            ctx = answered
        starts = first or self._child_unasked(plugin, row) or create_retry.restarts(row.data, action)
        result = plugin.start(Action(action), ctx) if starts else plugin.check(Action(action), ctx)
        if isinstance(result, Nest):
            return await self.nest(row, action, self._provided(plugin, row.name, result))
        if isinstance(result, Store):
            return await self.store(row, action, result)
        if isinstance(result, Wait | Call):
            named = result.step or (plugin.named_steps[0] if first and plugin.named_steps else None)
            return await self.wait(row, plugin, action, props, result,
                                   step_hook=rules.named_hook(action, named) if named else None)
        if isinstance(result, Failed):  # the resource fails, or is made again (Heat's action_retry_limit)
            return await self.wait(row, plugin, action, props, result, step_hook=None)
        assert isinstance(result, Done)
        return await self.completed(row, plugin, action, props=props, result=result, propagate=propagate)

    async def _beyond_row(self, row: resources.ResourceRow, plugin: ResourceType, props: Mapping[str, Any],
                          ctx: StepContext) -> StepContext:
        """The context with what the type reads beyond its row: a peer's data, its signal URL and
        subject, its software configs and deployment."""
        if plugin.watches is not None and isinstance(props.get(plugin.watches), str):
            peer = await resources.data_of_reference(self.conn, self.stack_id, props[plugin.watches])
            ctx = dataclasses.replace(ctx, peer=peer or {})
        if plugin.accepts_signals and self.s.api_url:
            ctx = dataclasses.replace(ctx, signal_url=(
                f"{self.s.api_url}/v1/{self.stack.project}/stacks/{self.stack.name}/{self.stack_id}"
                f"/resources/{row.name}/signal"))
        if plugin.accepts_signals:
            ctx = dataclasses.replace(ctx, signal_subject=self.s.bus.names.signal(
                self.stack.project, str(self.stack_id), row.name))
        reads = plugin.software_reads(props, row.physical_id)
        if reads is not None:
            stored = await software.state(self.conn, self.stack.project, reads)
            ctx = dataclasses.replace(ctx, software=stored)
        return ctx

    async def _answered(self, row: resources.ResourceRow, action: str, ctx: StepContext
                        ) -> StepContext | None:
        """The step after a Call: its context with the answers; None once it asked for them to be made."""
        kept = pending.of(row.data)
        assert kept is not None
        if not kept.attempted:
            # A Call's delay is over: marked attempted (committed) before the calls are made.
            marked = await self._apply(row, action, Outcome({"data": pending.attempting(row.data)}))
            self.calls = Calls(kept.to_make, marked, self.stack.project)
            return None
        # After a crash between making them and this step, no answers: the plugin finds what
        # they made by its cloud tag.
        got = pending.next_step(row.data, row.version, self.answers, self.answered)
        if isinstance(got, tuple):  # the cloud asked to be tried again later
            data, delay = got
            await self._apply(row, action, Outcome({"data": data}))
            raise Retry(delay, f"{action} of {row.name}: the cloud is to be tried again")
        return dataclasses.replace(ctx, answers=got)

    async def wait(self, row: resources.ResourceRow, plugin: ResourceType, action: str,
                   props: Mapping[str, Any], result: Wait | Call | Failed, *, step_hook: str | None
                   ) -> list[str]:
        """Record what the step gave, then look again after its delay (or pause at a named step),
        or once the calls it asked for are made."""
        out = self._outcome(row, plugin, action, props, result)
        if out.failure is not None:  # failed (or a Call with no cloud to call)
            await self.mark_failed(row, action, out.changes["status_reason"])
            return []
        written = await self._apply(row, action, out)
        if out.calls:
            self.calls = Calls(out.calls, written, self.stack.project)
            return []
        if step_hook is not None:
            # The action started; a breakpoint may hold it before its first check.
            async with self.conn.transaction():  # the pause and where it is, or neither
                verdict = await self.gate.at(written, step_hook)
                marked = rows.merged(written.data, {NAMED_STEP_KEY: step_hook})
                if verdict == "wait" and await self._write(written, data=marked) is None:
                    raise Conflict("resource row changed under this step")
            if verdict == "wait":
                return []
            if verdict == "fail":
                await self.mark_failed(written, action, rules.timed_out_reason(step_hook))
                return []
        raise Retry(out.retry or 0.0, out.about)

    async def _past_named_step(self, row: resources.ResourceRow, action: str) -> resources.ResourceRow | None:
        """The row once past the named step it paused at; None while it waits there (or failed)."""
        hook = row.data[NAMED_STEP_KEY]
        verdict = await self.gate.at(row, hook)
        if verdict == "wait":
            return None
        if verdict == "fail":
            await self.mark_failed(row, action, rules.timed_out_reason(hook))
            return None
        passed = await self._write(row, data=rows.merged(row.data, {NAMED_STEP_KEY: None}))
        if passed is None:
            raise Conflict("resource row changed under this step")
        return passed

    def _plugin(self, type_name: str, resource_name: str) -> ResourceType:
        """The plugin of a type the desired definition names."""
        return self.s.registry.implementing(type_name, resource_name=resource_name, environment=self.env)

    def _row_plugin(self, row: resources.ResourceRow, action: str | None = None) -> ResourceType:
        """The plugin of ``action`` on ``row``: the desired definition's for what it drives (create,
        update, adopt), else (and with no action) what the row is, through the environment it
        was made with."""
        follows = action is not None and rows.follows_definition(action, self.want, row.name)
        return self.s.registry.implementing(row.type, resource_name=row.name,
                                            environment=self.env if follows else self.own_env)

    def _child_unasked(self, plugin: ResourceType, row: resources.ResourceRow) -> bool:
        """Whether this traversal's action on a nesting ``row`` has not asked its nested stack yet:
        a step killed between the action's first write and its ask left it so, and the
        redelivered step asks (starts) again rather than waiting for a child nobody asked."""
        return plugin.nests and row.data.get(rows.NESTED_KEY) != str(self.traversal_id)

    def _busy_elsewhere(self, row: resources.ResourceRow) -> bool:
        """Whether an older traversal's action on ``row`` is under way."""
        return row.status == Status.IN_PROGRESS and row.traversal_id != self.traversal_id

    def _context(self, row: resources.ResourceRow, props: Mapping[str, Any]) -> StepContext:
        return rows.step_context(self.stack, row, props, self.s.rng, ready_timeout=self.s.ready_timeout,
                                 api_url=self.s.api_url)

    def _provided(self, plugin: ResourceType, name: str, request: Nest) -> Nest:
        """What only the parent's desired state has: its files and the child environment."""
        if self.want is None:
            return request
        given = nesting.provided(plugin, name, request, self.want)
        if given is request or given.timeout_mins is not None:
            return given
        # Heat's nested stacks (not OS::Heat::Stack's) run under the parent's timeout.
        return dataclasses.replace(given, timeout_mins=self.stack.timeout_mins)

    async def nest(self, row: resources.ResourceRow, action: str, request: Nest) -> list[str]:
        """Act on the nested stack, record it as the physical id, and look again after a delay.

        The child's new desired state and the row's record of it (its id, the step's data,
        such as a rolling update's batch) commit together: a step killed in between must
        not leave a child working on a batch its parent does not know it started.
        """
        staged: list[PlanRequest] = []
        try:
            async with self.conn.transaction():
                child_id = await children.act(self.conn, self.s.bus, self.s.registry, parent=self.stack,
                                              row=row, short_id=rows.short_id(row.id), nest=request,
                                              after_commit=staged, evaluation=self.s.evaluation,
                                              tree_limits=self.s.limits)
                changes: dict[str, Any] = {}
                if child_id is not None and row.physical_id != str(child_id):
                    changes["physical_id"] = str(child_id)
                asked = {rows.NESTED_KEY: str(self.traversal_id)}
                if request.data or row.data.get(rows.NESTED_KEY) != asked[rows.NESTED_KEY]:
                    changes["data"] = rows.merged(row.data, {**request.data, **asked})
                if changes and await self._write(row, **changes) is None:
                    raise Conflict("resource row changed under this step")
        except TemplateError as exc:
            # The nested template is checked when its stack is made, as Heat does.
            await self.mark_failed(row, action, f"{exc.error_type}: resources.{row.name}: {exc}")
            return []
        except Exception as exc:
            if isinstance(exc, Retry) or is_transient(exc):
                raise
            # Anything else would fail the same way every time: Heat fails the resource.
            log.exception("acting on the nested stack of %s failed", row.name)
            await self.mark_failed(row, action, f"{type(exc).__name__}: resources.{row.name}: {exc}")
            return []
        for plan in staged:
            await plan_requests.send(Held(self.conn), self.s.bus, plan)
        raise Retry(request.delay, f"{action} of the nested stack of {row.name} in progress")

    async def store(self, row: resources.ResourceRow, action: str, request: Store) -> list[str]:
        """Store the software configs and deployment a step asked for, with what it records of
        them, and look again after its delay."""
        async with self.conn.transaction():  # the rows and the resource's record of them, or neither
            servers = await software.store(self.conn, self.stack.project, request)
            changes: dict[str, Any] = {}
            if not isinstance(request.physical_id, KeepType) and request.physical_id != row.physical_id:
                changes["physical_id"] = request.physical_id
            if request.data:
                changes["data"] = rows.merged(row.data, request.data)
            if changes and await self._write(row, **changes) is None:
                raise Conflict("resource row changed under this step")
            if request.stack_user is not None:
                await stack_users.put(self.conn, request.stack_user, project_id=self.stack.project,
                                      stack_id=self.stack_id, resource_id=row.id, resource_name=row.name)
        for server_id in sorted(servers):
            await software.push(self.conn, self.s.bus, self.stack.project, server_id)
        raise Retry(request.delay, f"{action} of {row.name}: software configuration stored")

    async def completed(self, row: resources.ResourceRow, plugin: ResourceType, action: str, *,
                        props: dict[str, Any], result: Done, propagate: bool) -> list[str]:
        post = rules.post_hook(self.trav.action, action) if propagate and self.current else None
        # Kept as DELETE_COMPLETE while it may wait at post-delete; gone once past it.
        out = self._outcome(row, plugin, action, props, result, kept=post is not None)
        if not out.finished:  # a retry's delete done: the create starts again after its backoff
            await self._apply(row, action, out)
            raise Retry(out.retry or 0.0, out.about)
        adopted: resources.ResourceRow | None = None
        async with self.conn.transaction():
            [write] = await writer.with_requires(self.conn, self.stack_id, self.want,
                                                 [self._write_of(row, action, out)])
            done = await self._carry(write)
            if row.replaces is not None and not row.is_current and action != Action.DELETE:
                await resources.promote(self.conn, row.replaces, row.id)
            if action == Action.ADOPT and done.external_id is not None:
                adopted = done
            elif post is not None:
                return await self.done(done, in_transaction=True)
            if not propagate:
                return []
            if adopted is None:
                return await self.finish(None, in_transaction=True)
        # Heat checks an external resource once taken over; the node ends with the check.
        return await self.step(adopted, Action.CHECK, first=True, props=props)

    def _outcome(self, row: resources.ResourceRow, plugin: ResourceType, action: str,
                 props: Mapping[str, Any], result: Done | Wait | Failed | Call, *, kept: bool = False
                 ) -> Outcome:
        return outcome.of_step(row, action, result, plugin, props=props, traversal_id=self.traversal_id,
                               template_id=self.trav.template_id,
                               deletion_policy=self._deletion_policy(row.name), reads=self._reads(row.name),
                               kept=kept, can_call=self.s.caller is not None, retry_limit=self.s.retry_limit)

    async def done(self, row: resources.ResourceRow, *, in_transaction: bool = False) -> list[str]:
        """The node's action is complete: past its post-hook, if it has one, it is finished."""
        if not in_transaction:
            async with self.conn.transaction():
                return await self.done(row, in_transaction=True)
        post = rules.post_hook(self.trav.action, row.action) if row.status == Status.COMPLETE else None
        if post is not None:
            verdict = await self.gate.at(row, post)
            if verdict == "wait":
                return []
            if verdict == "fail":
                await self.mark_failed(row, row.action, rules.timed_out_reason(post))
                return []
        if self.kind == NodeKind.CLEANUP and row.action == Action.DELETE and row.status == Status.COMPLETE:
            await resources.remove(self.conn, row.id)
        return await self.finish(None, in_transaction=True)

    async def finish(self, _row: object, *, in_transaction: bool = False) -> list[str]:
        if not in_transaction:
            async with self.conn.transaction():
                return await self.finish(None, in_transaction=True)
        result = await traversals.finish_node(self.conn, self.traversal_id, self.item.node)
        if result is None:
            return await traversals.ready_successors(self.conn, self.traversal_id, self.item.node)
        ready, remaining = result
        if remaining == 0:
            await self.complete_stack()
        return ready

    # ---- the stack's end ----------------------------------------------------
    async def complete_stack(self) -> None:
        await stack_end.complete(self.conn, self.stack, self.trav, self.want, self.s.registry,
                                 resolve=self.s.outputs)

    async def fail_stack(self, reason: str) -> None:
        await stack_end.fail(self.conn, self.s.bus, self.stack, self.trav, reason, current=self.current,
                             want=self.want, resolve=self.s.outputs)

    async def refuse(self, row: resources.ResourceRow, refusal: Refusal) -> None:
        """An update Heat refuses: the resource keeps its state, at most an event says why."""
        if refusal.event:
            await self.event(row, Action.UPDATE, Status.FAILED, refusal.message)
        if self.current:
            await self.fail_stack(status.resource_failed(
                Action.UPDATE, f"{refusal.error_type}: resources.{row.name}: {refusal.message}"))

    async def _preempt(self, row: resources.ResourceRow, preempts: str) -> str | None:
        """An older traversal's action is cancelled, as Heat records it; a pause at one of its
        named steps goes with it, and a deployment it waits for (the server to push to, if so)."""
        reason = preempted_reason(self.trav.action, preempts, row.name)
        cancelled = await self.cancel_software(row)
        await self.event(row, preempts, Status.FAILED, reason)
        if self.trav.action != Action.DELETE:
            # Heat's older traversal also writes its stack's failure (only the event: the stack
            # goes on with this traversal).
            await stack_end.stack_event(self.conn, self.stack, self.traversal_id, action=preempts,
                                        state=Status.FAILED, reason=status.resource_failed(preempts, reason))
        return cancelled

    async def cancel_software(self, row: resources.ResourceRow) -> str | None:
        """Heat's ``handle_<action>_cancel`` of a deployment: its row FAILED, "Deployment cancelled.",
        if it still waits. The server whose deployments changed, to push once committed."""
        try:
            plugin = self._row_plugin(row)
        except KeyError:
            return None  # a type no longer known has no deployment to cancel
        if not isinstance(plugin, SoftwareType):
            return None
        return await software.cancel(self.conn, plugin.cancels(row.physical_id))

    async def cancel_waiting(self, row: resources.ResourceRow) -> None:
        """A deployment the action under way on ``row`` waits for is cancelled now, its server told."""
        async with self.conn.transaction():
            server = await self.cancel_software(row)
        if server is not None:
            await software.push(self.conn, self.s.bus, self.stack.project, server)

    async def abandon(self, row: resources.ResourceRow, reason: str) -> None:
        """The action under way on ``row`` is given up (its stack timed out): it fails, and so
        does a deployment it waits for, as Heat's cancelled task does."""
        async with self.conn.transaction():
            server = await self.cancel_software(row)
            await self.mark_failed(row, row.action, reason)
        if server is not None:
            await software.push(self.conn, self.s.bus, self.stack.project, server)

    async def mark_failed(self, row: resources.ResourceRow, action: str, reason: str) -> None:
        async with self.conn.transaction():
            await self._apply(row, action, outcome.failed(action, reason, self.traversal_id))
        if self.current:
            await self.fail_stack(status.resource_failed(action, reason))

    def _reads(self, name: str) -> frozenset[tuple[Any, ...]]:
        """What the template reads of the resource (for types that answer reads themselves)."""
        if self.want is None:
            return frozenset()
        return self.want.definition.attribute_reads.get(name, frozenset())

    def _wholly_read(self, name: str) -> bool:
        """Whether the template reads the resource alone (``get_attr: [res]``)."""
        return self.want is not None and name in self.want.definition.whole_reads

    def _deletion_policy(self, name: str) -> str:
        return rows.deletion_policy(self.want, name)

    # ---- writes ---------------------------------------------------------------
    async def _write(self, row: resources.ResourceRow, **changes: Any) -> resources.ResourceRow | None:
        return await resources.write(self.conn, row, **changes)

    def _write_of(self, row: resources.ResourceRow, action: str, out: Outcome) -> writer.Write:
        return writer.Write(self.stack, self.traversal_id, row, action, out)

    async def _apply(self, row: resources.ResourceRow, action: str, out: Outcome) -> resources.ResourceRow:
        """``out`` written by the one writer; the row as written."""
        return await self._carry(self._write_of(row, action, out))

    async def _begin(self, row: resources.ResourceRow, action: str, out: Outcome) -> resources.ResourceRow:
        """An action's first write, with the rows it needs recorded (:func:`writer.with_requires`)."""
        first = self._write_of(row, action, out)
        [write] = await writer.with_requires(self.conn, self.stack_id, self.want, [first])
        written = await self._carry(write)
        if action == Action.UPDATE and self.live is not None:
            return dataclasses.replace(written, properties=self.live)  # what the plugin's diff starts from
        return written

    async def _carry(self, write: writer.Write) -> resources.ResourceRow:
        written = (await writer.write(self.conn, [write]))[write.row.id]
        if written is None:
            raise Conflict("resource row changed under this step")
        return written

    async def event(self, row: resources.ResourceRow, action: str, state: Status, reason: str) -> None:
        await events.add(self.conn, stack_id=self.stack_id, resource_name=row.name,
                         physical_resource_id=rows.event_physical_id(self.stack.name, row),
                         resource_type=row.type, action=action,
                         status=state, reason=reason, traversal_id=self.traversal_id)
