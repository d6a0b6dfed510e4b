"""Nested stacks, as the worker acts on them for a stack-nesting resource's steps.

A nesting plugin answers :class:`~libs.resources.steps.Nest`; here that
becomes a real operation on the child stack through :mod:`libs.operations`
(the same calls the api makes), and the child, as it is now, becomes the
plugin's ``ctx.child``. The child is named as Heat names it,
``<parent>-<resource>-<short id>``; a redelivered create finds the child it
made the first time instead of making another.
"""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from libs import nested_reads, operations
from libs.db import Conn, resources, stacks, templates
from libs.db.pool import Held
from libs.engine.status import Action, Status
from libs.evaluation_pool import INLINE, Evaluator
from libs.messaging.bus import Bus
from libs.messaging.payloads import PlanRequest
from libs.resources.registry import Registry
from libs.resources.steps import ChildStack, KeepType, Nest, NestedReads
from libs.template import loader
from libs.template.errors import TemplateError
from libs.template.limits import Limits
from libs.template.request import StackRequest

CHILD_LIMITS = Limits().nested()
TREE_LIMITS = Limits()


def child_name(parent: stacks.StackRow, row: resources.ResourceRow, short_id: str) -> str:
    return f"{parent.name}-{row.name}-{short_id}"


async def current(conn: Conn, parent: stacks.StackRow, row: resources.ResourceRow,
                  short_id: str, reads: NestedReads | None = None, *,
                  registry: Registry) -> ChildStack | None:
    """The child stack of ``row``, or None before there is one.

    Found by the row's physical id, or by its name when the step that made it
    died before recording that id: the next step must see the child, not wait
    for one that will never be made. Once it has settled, it carries its size
    and the current resources ``reads`` asks for (what the parent's template
    reads through ``row``), and no more of them.
    """
    child = await _child_of(conn, parent, row, short_id)
    if child is None:
        return None
    reads = reads or NestedReads()
    read: dict[str, tuple[Any, dict[str, Any]]] = {}
    size = None
    if child.status != Status.IN_PROGRESS and child.deleted_at is None:
        size = await resources.current_count(conn, child.id)
        if reads:
            read = await nested_reads.nested_read(conn, registry, child.id, reads)
    began = child.updated_at or child.created_at
    return ChildStack(id=str(child.id), name=child.name, action=child.action, status=child.status,
                      status_reason=child.status_reason, outputs=tuple(child.outputs or ()),
                      deleted=child.deleted_at is not None, project=child.project, resources=read,
                      every=reads.every, whole=reads.whole, size=size,
                      running_for=(datetime.datetime.now(datetime.UTC) - began).total_seconds())


async def act(conn: Conn, bus: Bus, registry: Registry, *, parent: stacks.StackRow,
              row: resources.ResourceRow, short_id: str, nest: Nest,
              after_commit: list[PlanRequest], evaluation: Evaluator = INLINE,
              tree_limits: Limits = TREE_LIMITS) -> uuid.UUID | None:
    """Carry out ``nest`` on the child; returns the child's id (None when there is no child).

    Runs on the step's own connection, in the step's transaction: the child's new
    desired state commits with what the step records of it, or neither does. The
    plan requests it stages are left in ``after_commit``, to send once that commits.
    ``tree_limits``: the depth and the resources of the whole tree a child may bring
    (raises :class:`~libs.template.errors.RequestLimitExceeded`).
    """
    request = StackRequest(template=nest.template, files=dict(nest.files), environment=nest.environment,
                           parameters=dict(nest.parameters))
    limits = CHILD_LIMITS
    pool = Held(conn)
    child = await _child_of(conn, parent, row, short_id)
    if nest.operation == "create" and child is not None:
        return child.id  # made by an earlier delivery of this step
    kept = isinstance(nest.template, KeepType)  # the child's template: its size is known to fit
    if nest.operation == "create" or (nest.operation == "update" and child is not None and not kept):
        await check_limits(conn, tree_limits, parent=parent, child=child, template=nest.template)
    if nest.operation == "create":
        made = await operations.create_stack(
            pool, bus, project=parent.project, name=child_name(parent, row, short_id), stack_request=request,
            options=operations.Options(disable_rollback=True, timeout_mins=nest.timeout_mins), limits=limits,
            builtin_types=registry.types(), registry=registry, parent=parent, facade=nest.facade,
            adopt_data=nest.adopt_data, after_commit=after_commit, evaluation=evaluation)
        return made.id
    if child is None:
        return None
    if nest.operation == "update" and kept:
        if child.template_id is not None and not nest.parameters and await templates.same_inputs(
                conn, child.template_id, nest.files, nest.environment, nest.facade):
            options = operations.Options(disable_rollback=True, timeout_mins=nest.timeout_mins)
            await operations.update_stack_kept(pool, bus, child, options=options, after_commit=after_commit)
            return child.id
        # The parent's files or environment changed: the same members, checked again with them.
        assert child.template_id is not None
        kept_template = (await templates.get(conn, child.template_id)).template
        request = dataclasses.replace(request, template=kept_template)
        await check_limits(conn, tree_limits, parent=parent, child=child, template=request.template)
    if nest.operation == "update":
        checked = nest.checked if nest.checked and child.template_id is not None and (
            await templates.same_inputs(conn, child.template_id, nest.files, nest.environment, nest.facade)
        ) else frozenset()
        await operations.update_stack(
            pool, bus, child, stack_request=request,
            options=operations.Options(disable_rollback=True, timeout_mins=nest.timeout_mins),
            limits=limits, builtin_types=registry.types(), registry=registry, facade=nest.facade,
            cancel_running=True,  # the parent's newer update preempts one still running
            after_commit=after_commit, evaluation=evaluation, checked=checked)
    elif nest.operation == "delete":
        if child.deleted_at is None and child.stack_status != "DELETE_IN_PROGRESS":
            await operations.delete_stack(pool, bus, child, after_commit=after_commit)
    else:
        await operations.stack_action(pool, bus, child, Action(nest.operation.upper()),
                                      after_commit=after_commit)
    return child.id


async def check_limits(conn: Conn, limits: Limits, *, parent: stacks.StackRow,
                       child: stacks.StackRow | None, template: Any) -> None:
    """Heat's checks as a nested stack is made or updated: its depth, and the resources of the
    root's whole tree with the child's new ones (its current ones not counted twice)."""
    limits.check_nested_depth(parent.nested_depth)
    if limits.max_resources_per_stack == -1:
        return
    if isinstance(template, str):  # a provider template's text
        try:
            template = loader.parse_template(template, max_size=CHILD_LIMITS.max_template_size)
        except TemplateError:
            template = None  # loading the child reports it, with Heat's message
    section = None
    if isinstance(template, Mapping):
        section = template.get("resources") or template.get("Resources")
    total = len(section) if isinstance(section, Mapping) else 0
    total += await stacks.tree_resource_count(conn, parent.id)
    if child is not None:
        total -= await resources.current_count(conn, child.id)
    limits.check_resource_count(total)


async def _child_of(conn: Conn, parent: stacks.StackRow, row: resources.ResourceRow,
                    short_id: str) -> stacks.StackRow | None:
    if row.physical_id:
        try:
            found = await stacks.get(conn, uuid.UUID(row.physical_id))
        except ValueError:
            found = None
        if found is not None and found.parent_id == parent.id:
            return found
    return await stacks.by_name(conn, parent.project, child_name(parent, row, short_id))
