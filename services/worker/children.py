"""Nested stacks, as the worker acts on them for a stack-nesting resource's steps.

A nesting plugin answers :class:`~libs.resources.steps.Nest`; here that
becomes a real operation on the child stack through :mod:`libs.operations`
(the same calls the api makes), and the child, as it is now, becomes the
plugin's ``ctx.child``. The child is named as Heat names it,
``<parent>-<resource>-<short id>``; a redelivered create finds the child it
made the first time instead of making another.
"""

from __future__ import annotations

import uuid

from libs import operations
from libs.db import Conn, resources, stacks
from libs.db.pool import Held
from libs.messaging.bus import Bus
from libs.resources.registry import Registry
from libs.resources.steps import ChildStack, Nest
from libs.template.limits import Limits
from libs.template.request import StackRequest

# A nested stack counts against no per-request limit of the api (the parent did), and
# a group's generated template grows with its size.
CHILD_LIMITS = Limits(max_resources_per_stack=-1, max_template_size=2**31)


def child_name(parent: stacks.StackRow, row: resources.ResourceRow, short_id: str) -> str:
    return f"{parent.name}-{row.name}-{short_id}"


async def current(conn: Conn, parent: stacks.StackRow, row: resources.ResourceRow,
                  short_id: str) -> ChildStack | None:
    """The child stack of ``row``, or None before there is one.

    Found by the row's physical id, or by its name when the step that made it
    died before recording that id: the next step must see the child, not wait
    for one that will never be made.
    """
    child = await _child_of(conn, parent, row, short_id)
    if child is None:
        return None
    return ChildStack(id=str(child.id), name=child.name, action=child.action, status=child.status,
                      status_reason=child.status_reason, outputs=tuple(child.outputs or ()),
                      deleted=child.deleted_at is not None)


async def act(conn: Conn, bus: Bus, registry: Registry, *, parent: stacks.StackRow,
              row: resources.ResourceRow, short_id: str, nest: Nest) -> uuid.UUID | None:
    """Carry out ``nest`` on the child; returns the child's id (None when there is no child).

    Runs on the step's own connection, outside any transaction of the step.
    """
    request = StackRequest(template=nest.template, files=dict(nest.files), environment=nest.environment,
                           parameters=dict(nest.parameters))
    limits = CHILD_LIMITS
    pool = Held(conn)
    child = await _child_of(conn, parent, row, short_id)
    if nest.operation == "create":
        if child is not None:
            return child.id  # made by an earlier delivery of this step
        made = await operations.create_stack(
            pool, bus, project=parent.project, name=child_name(parent, row, short_id), stack_request=request,
            options=operations.Options(disable_rollback=True, timeout_mins=nest.timeout_mins), limits=limits,
            builtin_types=registry.types(), registry=registry, parent=parent, facade=nest.facade,
            adopt_data=nest.adopt_data)
        return made.id
    if child is None:
        return None
    if nest.operation == "update":
        await operations.update_stack(
            pool, bus, child, stack_request=request,
            options=operations.Options(disable_rollback=True, timeout_mins=nest.timeout_mins),
            limits=limits, builtin_types=registry.types(), registry=registry, facade=nest.facade,
            cancel_running=True)  # the parent's newer update preempts one still running
    elif nest.operation == "delete":
        if child.deleted_at is None and child.stack_status != "DELETE_IN_PROGRESS":
            await operations.delete_stack(pool, bus, child)
    else:
        await operations.stack_action(pool, bus, child, nest.operation.upper())
    return child.id


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
