"""A node at a hook: pause (record it and let go of the message), wait on, time out, or go on.

A paused node holds no worker and no connection: its message is acked and
the ``hooks`` row remembers the pause. Clearing the hook re-queues the node;
a sweep re-queues it should that publish be lost, or once a deadline passes
(:mod:`services.worker.hook_sweep`).
"""

from __future__ import annotations

from typing import Literal

from libs.db import Conn, breakpoints, events, hooks, resources, stacks, traversals
from libs.engine import hooks as rules
from libs.messaging.payloads import HookNotice
from libs.telemetry.propagation import Stored
from libs.template.registry import ResourceRegistry
from services.worker import rows

Verdict = Literal["go", "wait", "fail"]


class Gate:
    """The hooks of one delivery of one node; the notices it made are published after commit."""

    def __init__(self, conn: Conn, stack: stacks.StackRow, trav: traversals.TraversalRow, node: str,
                 env: ResourceRegistry | None) -> None:
        self.conn = conn
        self.stack = stack
        self.trav = trav
        self.node = node
        self.env = env
        self.notices: list[HookNotice] = []
        self._placed: list[rules.Placed] | None = None

    async def at(self, row: resources.ResourceRow, hook: str) -> Verdict:
        """What the node does at ``hook``, recording a pause, a timeout or the resumption."""
        seen = await hooks.get(self.conn, self.trav.id, self.node, hook)
        if seen is None:
            pause = rules.pause_for(
                hook, resource_name=row.name, resource_type=row.type,
                env_hooks=self.env.hooks_for(row.name) if self.env is not None else (),
                breakpoints=await self._breakpoints(), mode=self.trav.hook_mode)
            if pause is None:
                return "go"
            async with self.conn.transaction():
                if await hooks.reach(self.conn, traversal_id=self.trav.id, node=self.node, hook=hook,
                                     stack_id=self.stack.id, resource_name=row.name,
                                     action=rules.hook_action(hook), source=pause.source,
                                     timeout_seconds=pause.timeout_seconds, on_timeout=pause.on_timeout,
                                     trace=Stored.of()):
                    await self._event(row, rules.paused_reason(hook))
                    self._notice(row.name, hook, "reached")
            return "wait"
        if seen.waiting:
            if seen.deadline is not None and rows.now() >= seen.deadline:
                async with self.conn.transaction():
                    if await hooks.clear(self.conn, self.trav.id, self.node, hook, "timeout"):
                        await self._event(row, rules.timed_out_reason(hook))
                        self._notice(row.name, hook, "timed_out", by="timeout")
                    await hooks.resumed(self.conn, self.trav.id, self.node, hook)
                return "fail" if seen.on_timeout == "fail" else "go"
            return "wait"
        if seen.resumed_at is None:
            await hooks.resumed(self.conn, self.trav.id, self.node, hook)
        if seen.cleared_by == "timeout" and seen.on_timeout == "fail":
            return "fail"  # a redelivery after the timeout failed the resource
        return "go"

    async def _breakpoints(self) -> list[rules.Placed]:
        if self._placed is None:
            self._placed = await breakpoints.reaching(self.conn, self.stack.id)
        return self._placed

    async def _event(self, row: resources.ResourceRow, reason: str) -> None:
        # As Heat: the event carries the resource's state as it is, not the paused action.
        await events.add(self.conn, stack_id=self.stack.id, resource_name=row.name,
                         physical_resource_id=rows.event_physical_id(self.stack.name, row),
                         resource_type=row.type, action=row.action,
                         status=row.status, reason=reason, traversal_id=self.trav.id)

    def _notice(self, resource_name: str, hook: str, state: str, by: str = "") -> None:
        self.notices.append(HookNotice(
            project=self.stack.project, stack_id=str(self.stack.id), stack_name=self.stack.name,
            resource_name=resource_name, hook=hook, state=state, traversal_id=str(self.trav.id),
            node=self.node, by=by))

