"""Stack operations as the API asks for them: validate, record the desired state, ask for a plan.

Each one answers as soon as the desired state is stored and the plan request
is on the queue (Heat's 201/202); the planner and workers do the rest. The
api service and the tests call these; nothing here waits for the cloud.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import asyncpg

from libs import plan_requests
from libs.db import Conn, events, resources, stacks, templates
from libs.db.pool import Connections
from libs.engine import preview, status
from libs.engine.step import RowState
from libs.messaging.bus import Bus
from libs.resources.base import ResourceType
from libs.resources.registry import Registry
from libs.template import errors, request
from libs.template.environment import Environment
from libs.template.limits import Limits
from libs.template.registry import ResourceRegistry
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template


class StackExists(errors.TemplateError):
    error_type = "StackExists"
    http_status = 409

    def __init__(self, name: str) -> None:
        super().__init__(f"The Stack ({name}) already exists.")


@dataclasses.dataclass(frozen=True)
class Options:
    disable_rollback: bool = True  # Heat's engine default
    timeout_mins: int | None = None
    tags: Sequence[str] = ()


def check_properties(definition: StackDefinition, registry: Registry,
                     environment: ResourceRegistry | None = None) -> None:
    """Heat's create-time property validation: unknown names, and values that are known already.

    Values that read other resources are not known before they exist; they
    resolve to None here and are checked leniently (Heat checks them when
    the resource's action runs, as Ember's worker does).
    """
    resolver = StackResolver(definition, StaticResourceData())
    for name, resource in definition.resources.items():
        try:
            plugin = registry.implementing(resource.type, resource_name=name, environment=environment)
        except KeyError:
            continue  # a template resource (provider template): validated as its own stack
        plugin.validate(resolver.properties(name), resource_name=name, strict_values=False)


async def create_stack(pool: Connections, bus: Bus, *, project: str, name: str,
                       stack_request: request.StackRequest, options: Options = Options(),
                       limits: Limits = request.DEFAULT_LIMITS,
                       builtin_types: Collection[str] | None = None,
                       registry: Registry | None = None,
                       parent: stacks.StackRow | None = None,
                       adopt_data: Mapping[str, Any] | None = None,
                       facade: Mapping[str, Any] | None = None) -> stacks.StackRow:
    """A new stack (``parent``: the stack it is nested in, one level deeper).

    With ``adopt_data`` (Heat's abandon data) the stack adopts the resources
    it lists instead of creating them: the ``ADOPT`` action.
    """
    stack_id = uuid.uuid4()
    loaded = request.load(stack_request, stack_name=name, stack_id=str(stack_id), project_id=project,
                          limits=limits, builtin_types=builtin_types, facade=facade)
    if registry is not None:
        check_properties(loaded.definition, registry, loaded.environment.registry)
    async with pool.acquire() as conn, conn.transaction():
        if await stacks.by_name(conn, project, name) is not None:
            raise StackExists(name)
        template_id = await templates.insert(conn, loaded.template.raw, loaded.template.files,
                                             loaded.environment.to_dict(), facade)
        try:
            row = await stacks.insert(conn, stack_id=stack_id, name=name, project=project,
                                      template_id=template_id, disable_rollback=options.disable_rollback,
                                      timeout_mins=options.timeout_mins, tags=list(options.tags),
                                      parent_id=parent.id if parent else None,
                                      nested_depth=parent.nested_depth + 1 if parent else 0)
        except asyncpg.UniqueViolationError:
            raise StackExists(name) from None
        if adopt_data is not None:
            await conn.execute("UPDATE stacks SET action = 'ADOPT', adopt_data = $2 WHERE id = $1",
                               stack_id, dict(adopt_data))
            row = dataclasses.replace(row, action="ADOPT")
        adopting = adopt_data is not None
        plan = await plan_requests.stage(conn, bus.names, row, "ADOPT" if adopting else "CREATE",
                                         reason="adopt" if adopting else "create")
    await plan_requests.send(pool, bus, plan)
    return row


async def patched_request(pool: Connections, stack: stacks.StackRow, given: request.StackRequest,
                          clear_parameters: Sequence[str] = ()) -> request.StackRequest:
    """Heat's PATCH (``existing``): what is given, merged over what the stack has.

    No template means the stored one; files merge into the stored files; the
    environment is loaded over the stored one; parameters merge over the stored
    ones, minus ``clear_parameters``, and those the template lacks are dropped.
    """
    assert stack.template_id is not None
    async with pool.acquire() as conn:
        stored = await templates.get(conn, stack.template_id)
    template = Template.load(given.template if given.template is not None else stored.template,
                             {**stored.files, **given.files})
    env = Environment.from_dict(stored.environment).with_layer(
        request.environment_for(given, template).to_dict()).to_dict()
    known = template.parameter_names()
    env["parameters"] = {k: v for k, v in env["parameters"].items()
                         if k in known and k not in clear_parameters}
    return request.StackRequest(template=template.raw, files=template.files, environment=env)


async def update_stack(pool: Connections, bus: Bus, stack: stacks.StackRow, *,
                       stack_request: request.StackRequest, options: Options | None = None,
                       existing: bool = False, clear_parameters: Sequence[str] = (),
                       converge: bool = False, limits: Limits = request.DEFAULT_LIMITS,
                       builtin_types: Collection[str] | None = None,
                       registry: Registry | None = None, facade: Mapping[str, Any] | None = None,
                       cancel_running: bool = False) -> None:
    """A new desired state; allowed while another traversal runs (no stack lock).

    ``converge`` (Heat's flag): every resource is observed and compared with
    the template as it is in the cloud, so drift is repaired even when the
    template did not change. ``cancel_running``: a create or update still
    running is cancelled first, as Heat's preemption of a nested stack's
    update does (a newer traversal supersedes it either way; this says so).
    """
    if stack.action == "SUSPEND":
        raise errors.NotSupported("Updating a stack when it is suspended")
    if stack.action == "DELETE":
        raise errors.NotSupported("Updating a stack when it is deleting")
    if existing:
        stack_request = await patched_request(pool, stack, stack_request, clear_parameters)
    loaded = request.load(stack_request, stack_name=stack.name, stack_id=str(stack.id),
                          project_id=stack.project, limits=limits, builtin_types=builtin_types,
                          facade=facade)
    if registry is not None:
        check_properties(loaded.definition, registry, loaded.environment.registry)
    async with pool.acquire() as conn, conn.transaction():
        template_id = await templates.insert(conn, loaded.template.raw, loaded.template.files,
                                             loaded.environment.to_dict(), facade)
        if cancel_running:
            await _cancel_running(conn, stack.id, actions=("CREATE", "UPDATE"))
        extra: dict[str, Any] = {}
        if options is not None:
            extra = {"disable_rollback": options.disable_rollback, "timeout_mins": options.timeout_mins,
                     "tags": list(options.tags)}
        await stacks.set_desired(conn, stack.id, action="UPDATE", template_id=template_id,
                                 reason=status.stack_started("UPDATE"), **extra)
        plan = await plan_requests.stage(conn, bus.names, stack, "UPDATE", reason="update",
                                         converge=converge)
    await plan_requests.send(pool, bus, plan)


async def delete_stack(pool: Connections, bus: Bus, stack: stacks.StackRow) -> None:
    """Allowed while another action runs: Heat cancels it, and the delete takes over its resources."""
    async with pool.acquire() as conn, conn.transaction():
        await _cancel_running(conn, stack.id)
        await stacks.set_desired(conn, stack.id, action="DELETE", template_id=stack.template_id,
                                 reason=status.stack_started("DELETE"))
        plan = await plan_requests.stage(conn, bus.names, stack, "DELETE", reason="delete")
    await plan_requests.send(pool, bus, plan)


async def _cancel_running(conn: Conn, stack_id: uuid.UUID, actions: Collection[str] | None = None) -> None:
    """Stop the stack's running traversal (of one of ``actions``; any if None), with Heat's event.

    Its steps then see they are stale: none starts another resource, and those
    under way are taken over by the traversal that comes next.
    """
    stopped = await stacks.stop_running(conn, stack_id, actions)
    if stopped is not None:
        name, action, traversal_id = stopped
        await events.add(conn, stack_id=stack_id, resource_name=name, physical_resource_id=str(stack_id),
                         resource_type="OS::Heat::Stack", action=action, status="FAILED",
                         reason=f"Stack {action} cancelled", traversal_id=traversal_id)


async def stack_action(pool: Connections, bus: Bus, stack: stacks.StackRow, action: str) -> None:
    """SUSPEND, RESUME or CHECK: a traversal over the current resources."""
    async with pool.acquire() as conn, conn.transaction():
        await stacks.set_desired(conn, stack.id, action=action, template_id=stack.template_id,
                                 reason=status.stack_started(action))
        plan = await plan_requests.stage(conn, bus.names, stack, action, reason=action.lower())
    await plan_requests.send(pool, bus, plan)


async def cancel_update(pool: Connections, bus: Bus, stack: stacks.StackRow, *, rollback: bool) -> None:
    """Heat's ``cancel_update`` (roll back) and ``cancel_without_rollback`` (stop where it is)."""
    allowed = ("UPDATE",) if rollback else ("UPDATE", "CREATE")
    if stack.status != "IN_PROGRESS" or stack.action not in allowed:
        raise errors.NotSupported(f"Cancelling update when stack is {stack.stack_status}")
    if rollback:
        async with pool.acquire() as conn, conn.transaction():
            await stacks.set_desired(conn, stack.id, action="ROLLBACK", template_id=stack.prev_template_id,
                                     reason=status.stack_started("ROLLBACK"))
            plan = await plan_requests.stage(conn, bus.names, stack, "ROLLBACK", reason="cancel_update")
        await plan_requests.send(pool, bus, plan)
        return
    reason = f"Stack {stack.action} cancelled"
    async with pool.acquire() as conn, conn.transaction():
        # A fresh traversal with no nodes becomes current: in-flight steps finish
        # their resource and stop propagating.
        await conn.execute("UPDATE stacks SET current_traversal = $2, status = 'FAILED',"
                           " status_reason = $3, updated_at = now() WHERE id = $1",
                           stack.id, uuid.uuid4(), reason)
        await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                         physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack",
                         action=stack.action, status="FAILED", reason=reason)


async def preview_update(pool: Connections, stack: stacks.StackRow, *,
                         stack_request: request.StackRequest, registry: Registry, existing: bool = False,
                         clear_parameters: Sequence[str] = ()) -> preview.Changes:
    """Heat's update preview: the same decisions as the worker would make now, nothing written."""
    if existing:
        stack_request = await patched_request(pool, stack, stack_request, clear_parameters)
    loaded = request.load(stack_request, stack_name=stack.name, stack_id=str(stack.id),
                          project_id=stack.project)
    definition = loaded.definition
    async with pool.acquire() as conn:
        rows = {r.name: r for r in await resources.for_stack(conn, stack.id) if r.is_current}
    data = StaticResourceData({n: r.reference for n, r in rows.items()},
                              {n: r.attributes for n, r in rows.items()})
    resolver = StackResolver(definition, data)

    env = loaded.environment.registry

    def plugin_of(name: str) -> ResourceType:
        return registry.implementing(definition.resources[name].type, resource_name=name, environment=env)

    def props(name: str) -> Mapping[str, Any]:
        return plugin_of(name).validate(resolver.properties(name), resource_name=name)

    def replace_rule(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
        return plugin_of(name).needs_replace

    current = {n: RowState(id=r.id, name=n, type=r.type, action=r.action, status=r.status,
                           is_current=True, traversal_id=None, template_id=None, properties=r.properties)
               for n, r in rows.items()}
    return preview.changes(current, {n: d.type for n, d in definition.resources.items()}, props,
                           replace_rule, lambda n: plugin_of(n).never_updates)
