"""One delivery of one node stepped alone: decide, hold at hooks, step, write.

The executor (:mod:`services.worker.executor`) holds the resource row's advisory
lock for the length of one step; here the node decides what it does
(:func:`libs.engine.step.decide`), stops at hooks, and carries the decision out
(:mod:`services.worker.stepping`: one plugin step, its outcome written with a
compare-and-set on the row's version). A finished node releases its successors
in the same transaction.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from libs.db import resources, snapshots, stacks, traversals
from libs.engine import desired, status
from libs.engine import hooks as rules
from libs.engine.drift import counted
from libs.engine.keys import NodeKind
from libs.engine.status import Action, Status
from libs.engine.step import Decision, Verb, attempted_action, restores_replaced
from libs.errors import Permanent, Retry
from libs.resources.base import ResourceType, described
from libs.resources.software_config import SoftwareType
from libs.resources.steps import Software
from libs.template.attribute_store import AttributeFailed
from libs.template.convergence import FieldPolicy
from libs.template.convergence import parse as parse_policy
from libs.template.resolution import StackResolver, StaticResourceData
from services.worker import children, pending, rows, software
from services.worker.hook_gate import Gate
from services.worker.outcome import Calls
from services.worker.stepping import Stepping


class Node(Stepping):
    """One delivery of one node; ``run`` returns the successor nodes to publish."""

    async def run(self) -> list[str]:
        conn = self.conn
        stack = await stacks.get(conn, self.stack_id)
        trav = await traversals.get(conn, self.traversal_id)
        if stack is None or trav is None:
            raise Permanent("stack or traversal no longer exists")
        self.stack, self.trav = stack, trav
        self.current = stack.current_traversal == trav.id
        node = await traversals.node(conn, trav.id, self.item.node)
        if node is None and trav.finished_at is not None:
            return []  # a late redelivery: the traversal finished and its nodes were swept
        if node is None:
            raise Permanent(f"no node {self.item.node} in traversal {trav.id}")
        if node.done:
            return await traversals.ready_successors(conn, trav.id, node.node) if self.current else []
        if node.waiting_on > 0:
            if not self.current:
                return []  # a stale traversal's predecessors never finish, and this node started nothing
            raise Retry(0.2, "predecessors not finished")
        self.want = await self._desired()
        if self.current and trav.deadline is not None and rows.now() > trav.deadline:
            waiting = await self._target_row()
            if waiting is not None and waiting.traversal_id == trav.id and (
                    waiting.status == Status.IN_PROGRESS):
                # Heat cancels a stack's tasks as it times out: whoever sees the stack timed out sees
                # a deployment its action waited for cancelled too (the action is abandoned below).
                await self.cancel_waiting(waiting)
            await self.fail_stack(status.TIMED_OUT)
            self.current = False  # and abandon this node's action below, as a stale one
        row = await self._target_row()
        if row is None:  # already forgotten by an earlier delivery of this node
            return await self.finish(None)
        # What the row is resolves through the environment it was made with (a delete has
        # no template of its own); what the desired definition asks for, through its own.
        own = rows.own_template(row, trav, stack)
        self.own_env = (await self.s.cache.get(conn, stack, own)).environment.registry if own else None
        self.env = self.want.environment.registry if self.want is not None else self.own_env
        self.gate = Gate(conn, stack, trav, self.item.node, self.env)
        if not self.current:
            # A stale traversal only finishes the action it started, then stops;
            # one that timed out abandons it instead (Heat's runner is cut short).
            if row.traversal_id == trav.id and row.status == Status.IN_PROGRESS:
                if trav.deadline is not None and rows.now() > trav.deadline:
                    await self.abandon(row, f"{row.action} aborted ({status.TIMED_OUT})")
                else:
                    await self.step(row, row.action, first=False, propagate=False)
            return []
        return await self.decide_and_step(row)

    async def give_up(self, error: BaseException) -> None:
        """The node's step failed the same way on every retry: its resource fails with the error.

        Called once the consumer stops retrying (``libs.errors.GIVE_UP_AFTER``). A stale
        traversal's node fails only an action it has under way, so that the current
        traversal does not wait on it for ever.
        """
        stack = await stacks.get(self.conn, self.stack_id)
        trav = await traversals.get(self.conn, self.traversal_id)
        node = await traversals.node(self.conn, self.traversal_id, self.item.node)
        if stack is None or trav is None or node is None or node.done:
            return
        self.stack, self.trav = stack, trav
        self.current = stack.current_traversal == trav.id
        self.want = await self._desired()
        row = await self._target_row()
        if row is None:
            return
        under_way = row.traversal_id == trav.id and row.status == Status.IN_PROGRESS
        if not (self.current or under_way):
            return
        action = attempted_action(self.kind, trav.action, str(trav.id), row.state())
        await self.mark_failed(row, action, f"{type(error).__name__}: resources.{row.name}: {error}")

    async def _desired(self) -> desired.Desired | None:
        """The traversal's desired state (None for a delete, which has no template)."""
        if self.trav.template_id is None:
            return None
        return await self.s.cache.get(self.conn, self.stack, self.trav.template_id)

    async def _target_row(self) -> resources.ResourceRow | None:
        row = await resources.get(self.conn, self.rid)
        if row is None or self.kind != NodeKind.UPDATE:
            return row
        # A replacement started by this node carries on in the new row.
        replacement = (await resources.replacements(self.conn, [row.id], self.traversal_id)).get(row.id)
        if replacement is not None:
            return await resources.get(self.conn, replacement)
        return row

    # ---- deciding -------------------------------------------------------------
    async def decide_and_step(self, row: resources.ResourceRow) -> list[str]:
        in_template = self.want is not None and row.name in self.want.definition.resources
        new_props: dict[str, Any] | None = None
        new_type: str | None = None
        plugin: ResourceType | None = None
        external_id: str | None = None
        restricted: set[str] = set()
        if self.kind == NodeKind.UPDATE and in_template and self.trav.action in status.CONVERGING:
            assert self.want is not None
            new_type = self.want.definition.resources[row.name].type
            plugin = self._plugin(new_type, row.name)
            restricted = self.want.environment.registry.restricted_actions(row.name)
            try:
                external_id = StackResolver(self.want.definition, StaticResourceData()).external_id(row.name)
                new_props = await self.properties(row.name, plugin)
            except AttributeFailed as exc:
                # An attribute it reads failed (a nested output): Heat fails the stack with that
                # error when it passes the attribute on, and never starts this resource.
                await self.fail_stack(str(exc))
                return []
            except Exception as exc:  # property errors fail the resource, as in Heat
                attempted = Action.CREATE if row.action == Action.INIT else Action.UPDATE
                await self.mark_failed(row, attempted, _reason(exc))
                return []
        # A delete waits for calls an older step may be making: their answers name what they made.
        in_flight = pending.in_flight(row.data, row.updated_at, rows.now(),
                                      request_timeout=self.s.cloud.request_timeout)
        state = dataclasses.replace(row.state(), calls_in_flight=in_flight)
        if plugin is not None and self.kind == NodeKind.UPDATE and restores_replaced(
                self.trav.action, plugin.prepares_replace):
            unmade = await resources.unmade_replacement(self.conn, row.id)
            state = dataclasses.replace(state, replacement=unmade.status if unmade else None)
        if plugin is not None and self.trav.converge and row.action != Action.INIT and (
                row.traversal_id != self.trav.id and row.status == Status.COMPLETE):
            observer, seen = self._row_plugin(row), self._context(row, row.properties or {})
            asked = observer.observe_call(seen) if self.s.caller is not None else None
            if asked is not None and self.answers is None:
                # Asked once nothing is held; this node is decided again with the answer.
                self.calls = Calls((asked,), None, self.stack.project)
                return []
            observed = observer.observe(dataclasses.replace(seen, answers=self.answers or {}))
            if observed is not None and (observed.gone or observed.error is not None):
                # Heat: UpdateReplace for one that is gone; one the cloud holds in error is made
                # again too, as Heat's next update replaces a resource its check found failed.
                return await self.carry_out(row, Decision(Verb.REPLACE), new_props)
            if observed is not None:
                applied = dict(row.properties or {})
                # What the environment's convergence section accepts or ignores is not put back.
                assert self.want is not None  # a converging update node has its desired state
                fields = parse_policy(self.want.environment.convergence).for_resource(row.name)
                live = {k: observed.properties[k] for k in counted(fields, applied)
                        if k in observed.properties}
                # And an update starts from the cloud's values, so what was changed by hand is in
                # its diff and put back.
                self.live = {**applied, **live}
                state = dataclasses.replace(state, properties=self.live)
                if new_props is not None:  # what was accepted (or is ignored) stays as recorded
                    new_props = {**new_props, **{k: applied[k] for k in applied if k in new_props
                                                 and fields.field(k) != FieldPolicy.REVERT}}
        same: bool | None = None
        nested_check_failed = False
        if plugin is not None and row.action != Action.INIT:
            # Heat compares what the names resolve to, each through its own environment.
            same = type(plugin) is self.s.registry.implementation(
                row.type, resource_name=row.name, environment=self.own_env)
            if plugin.nests and (row.action, row.status) == (Action.CHECK, Status.FAILED):
                child = await children.current(self.conn, self.stack, row, rows.short_id(row.id),
                                               registry=self.s.registry)
                nested_check_failed = child is not None and (child.action, child.status) == (
                    Action.CHECK, Status.FAILED)
        stored = await self._stored_for_update(row, plugin, new_props) if same else None
        decision = rows.decision(
            self.kind, self.trav, state, plugin, in_template=in_template, new_type=new_type, props=new_props,
            same=same, external_id=external_id, restricted=restricted,
            nested_check_failed=nested_check_failed,
            preemptible=self._busy_elsewhere(row) and self._row_plugin(row).nests, software=stored)
        return await self.carry_out(row, decision, new_props)
    async def _stored_for_update(self, row: resources.ResourceRow, plugin: ResourceType | None,
                                 props: Mapping[str, Any] | None) -> Software | None:
        """What a software type's update decides from beyond its properties (see ``update_reads``)."""
        if not isinstance(plugin, SoftwareType) or props is None:
            return None
        reads = plugin.update_reads(props, row.physical_id)
        return await software.update_state(self.conn, self.stack.project, reads) if reads else None

    async def carry_out(self, row: resources.ResourceRow, decision: Decision,
                        props: dict[str, Any] | None) -> list[str]:
        verb = decision.verb
        if verb == Verb.WAIT:
            raise Retry(0.5, f"{row.name}: {decision.action} of an earlier traversal still under way")
        if verb == Verb.DONE:
            return await self.done(row)
        hook = rules.pre_hook(self.trav.action, self.kind, verb, row.action) if decision.hooked else None
        if hook is None and self.trav.hook_mode == rules.HookMode.STEP and verb.action is not None:
            hook = f"pre-{verb.action.lower()}"  # stepping: every node that starts pauses
        if hook is not None:
            verdict = await self.gate.at(row, hook)
            if verdict == "wait":
                return []
            if verdict == "fail":
                await self.mark_failed(row, rules.hook_action(hook), rules.timed_out_reason(hook))
                return []
        if verb == Verb.REFUSE:
            assert decision.refusal is not None
            await self.refuse(row, decision.refusal)
            return []
        if verb == Verb.NOOP:
            async with self.conn.transaction():
                if self.kind == NodeKind.UPDATE and self.trav.template_id is not None:
                    await self._write(row, template_id=self.trav.template_id,
                                      deletion_policy=self._deletion_policy(row.name), **self._renamed(row))
                return await self.finish(None)
        if verb in (Verb.FORGET, Verb.RETAIN):
            async with self.conn.transaction():
                await resources.remove(self.conn, row.id)
                return await self.finish(None)
        if verb == Verb.CONTINUE:
            return await self.step(row, decision.action, first=False, props=props)
        if verb == Verb.REPLACE:
            assert self.want is not None
            new_type = self.want.definition.resources[row.name].type
            async with self.conn.transaction():
                if decision.announced:
                    await self._announce_replacement(row, props or {})
                new_id = await resources.insert_replacement(self.conn, row, new_type)
                if self.trav.snapshot_id is not None:
                    # Made again by a restore: it gets back the data the snapshot recorded.
                    recorded = await snapshots.resource_data(self.conn, self.trav.snapshot_id, row.name)
                    if recorded is not None:
                        await resources.set_data(self.conn, new_id, recorded)
                fresh = await resources.get(self.conn, new_id)
            assert fresh is not None
            return await self.step(fresh, Action.CREATE, first=True, props=props)
        renamed = self._renamed(row) if verb == Verb.UPDATE else {}
        assert verb.action is not None
        return await self.step(row, verb.action, first=True, props=props, changed=decision.changed,
                               external_id=decision.external_id, renamed=renamed, preempts=decision.preempts,
                               restores=decision.restores)

    async def _announce_replacement(self, row: resources.ResourceRow, props: Mapping[str, Any]) -> None:
        """Heat's update that finds it must replace: it starts, then ends saying so, on the old row.

        Heat names the resource in full when the type's own rule replaces it, and by its name
        alone when a property that cannot change in place changed.
        """
        plugin, old = self._row_plugin(row), row.properties or {}
        by_type = plugin.replace_for_changes(plugin.changed_properties(old, props), old, props)
        text = described(plugin.heat_class_name(), row.name, row.physical_id, self.stack.name,
                         str(self.stack.id)) if by_type else row.name
        if not plugin.needs_replace(old, props):
            text = "Unknown"  # replaced for what is stored: Heat's deployment raises UpdateReplace unnamed
        await self.event(row, Action.UPDATE, Status.IN_PROGRESS, status.STATE_CHANGED)
        await self.event(row, Action.UPDATE, Status.COMPLETE, f"The Resource {text} requires replacement.")

    def _renamed(self, row: resources.ResourceRow) -> dict[str, str]:
        """The row's new type name, where the template now calls its implementation otherwise."""
        if (self.kind != NodeKind.UPDATE or self.want is None
                or row.name not in self.want.definition.resources):
            return {}
        new_type = self.want.definition.resources[row.name].type
        return {"type": new_type} if new_type != row.type else {}


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if not hasattr(exc, "error_type") else str(exc)

