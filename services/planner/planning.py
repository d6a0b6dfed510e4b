"""Turning a plan request into a traversal: the planner's one job.

The stack is locked for the length of one transaction (milliseconds, never
during execution): read the desired state and the rows, build the graph
(pure), write the traversal and its nodes, make it current, record the
"started" event. The first wave is published after commit; a redelivered
request finds its traversal by request id and only publishes again.
"""

from __future__ import annotations

import datetime
import uuid

from libs.db import Conn, events, locks, resources, stacks, templates, traversals
from libs.engine import desired, plan, status
from libs.errors import Permanent
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import PlanRequest, WorkItem
from libs.runtime import Runtime
from libs.telemetry import logs
from libs.template.errors import TemplateError

log = logs.logger("planner")


async def handle_plan(rt: Runtime, request: PlanRequest, _delivery: Delivery) -> None:
    stack_id = uuid.UUID(request.stack_id)
    with logs.log_context(stack_id=request.stack_id):
        async with rt.pool.acquire() as conn, conn.transaction():
            await locks.lock_stack_for_transaction(conn, stack_id)
            stack = await stacks.get(conn, stack_id)
            if stack is None or stack.deleted_at is not None:
                raise Permanent(f"stack {stack_id} does not exist")
            existing = await traversals.by_request(conn, stack_id, request.request_id)
            if existing is not None:
                traversal_id = existing
                ready = await traversals.ready_nodes(conn, existing)
            else:
                traversal_id, ready = await _plan(conn, stack, request)
        with logs.log_context(traversal_id=str(traversal_id)):
            for node in ready:
                item = WorkItem(stack_id=request.stack_id, traversal_id=str(traversal_id), node=node)
                await rt.bus.publish(rt.names.work(request.stack_id), item, msg_id=item.msg_id)
            log.info("planned %s: %d node(s) ready", request.action, len(ready))


async def _plan(conn: Conn, stack: stacks.StackRow, request: PlanRequest) -> tuple[uuid.UUID, list[str]]:
    action = request.action
    traversal_id = uuid.uuid4()
    template_id = None if action == "DELETE" else stack.template_id
    rows = await resources.for_stack(conn, stack.id)
    requires: dict[str, set[str]] = {}
    types: dict[str, str] = {}
    if template_id is not None and action in status.CONVERGING:
        raw = await templates.get(conn, template_id)
        try:
            want = desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                                stack_id=str(stack.id), project_id=stack.project)
            requires = want.requires()
            types = want.types()
        except TemplateError as exc:
            await _fail_now(conn, stack, traversal_id, action, request=request, reason=str(exc))
            return traversal_id, []
    plan_rows = [plan.Row(r.id, r.name, r.is_current, tuple(r.requires)) for r in rows]
    added = plan.rows_to_add(list(requires), plan_rows)
    new_ids = await resources.insert_new(conn, stack.id, [(n, types[n]) for n in added])
    plan_rows += [plan.Row(rid, name, True) for name, rid in new_ids.items()]
    graph = plan.build(action, requires, plan_rows, frozenset(new_ids.values()))
    deadline = None
    if stack.timeout_mins:
        deadline = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=stack.timeout_mins)
    await traversals.insert(conn, traversal_id=traversal_id, stack_id=stack.id, action=action,
                            template_id=template_id, graph=graph, deadline=deadline,
                            request_id=request.request_id)
    reason = status.stack_started(action)
    await stacks.begin_traversal(conn, stack.id, traversal_id, action, reason)
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=status.IN_PROGRESS, reason=reason, traversal_id=traversal_id)
    if not graph.nodes:
        await _complete_empty(conn, stack, traversal_id, action)
    return traversal_id, graph.ready()


async def _complete_empty(conn: Conn, stack: stacks.StackRow, traversal_id: uuid.UUID, action: str) -> None:
    reason = status.stack_completed(action)
    await stacks.settle(conn, stack.id, traversal_id, status=status.COMPLETE, reason=reason,
                        outputs=[] if action != "DELETE" else None,
                        completed_template=action != "DELETE", deleted=action == "DELETE")
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=status.COMPLETE, reason=reason, traversal_id=traversal_id)


async def _fail_now(conn: Conn, stack: stacks.StackRow, traversal_id: uuid.UUID, action: str, *,
                    request: PlanRequest, reason: str) -> None:
    graph = plan.TraversalGraph({})
    await traversals.insert(conn, traversal_id=traversal_id, stack_id=stack.id, action=action,
                            template_id=stack.template_id, graph=graph, deadline=None,
                            request_id=request.request_id)
    await stacks.begin_traversal(conn, stack.id, traversal_id, action, reason)
    await stacks.settle(conn, stack.id, traversal_id, status=status.FAILED, reason=reason)
    await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                     physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack", action=action,
                     status=status.FAILED, reason=reason, traversal_id=traversal_id)
