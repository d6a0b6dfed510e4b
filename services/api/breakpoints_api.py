"""Ember's debugger on a stack: breakpoints, the nodes paused now, step and continue.

Routes under ``/v1/{project}/stacks/{name}/{id}``:

- ``GET|POST|DELETE breakpoints``, ``DELETE breakpoints/{id}``: the stack's
  breakpoints (a resource name, fnmatch pattern or nested path such as
  ``group/0``; the hooks they pause at; optionally a resource type, and a
  ``timeout`` in seconds with ``on_timeout`` ``fail`` or ``continue``).
- ``GET paused``: the nodes waiting at hooks in the stack and the stacks nested in it.
- ``POST step``: release every paused node, and pause each node that starts next.
- ``POST continue``: release every paused node and run the operation to its end.
"""

from __future__ import annotations

import uuid
from collections.abc import Set as AbstractSet
from typing import Any

from aiohttp import web

from libs import pauses
from libs.db import breakpoints, hooks, resources, stacks, templates
from libs.engine import desired
from libs.engine import hooks as rules
from libs.engine.status import Action
from libs.resources.registry import Registry
from libs.template.errors import EntityNotFound, MalformedRequest
from libs.template.registry import HOOK_TYPES
from libs.template.resolution import StackResolver, StaticResourceData
from services.api import lookup
from services.api.http import evaluation, json_body, json_response, path_uuid
from services.api.keys import REGISTRY, RUNTIME

DEFAULT_HOOKS = ("pre-create", "pre-update", "pre-delete")


def breakpoint_from(body: dict[str, Any]) -> rules.Breakpoint:
    """A breakpoint from a request body, or a 400 naming the bad field."""
    unknown = sorted(set(body) - {"resource", "hooks", "resource_type", "timeout", "on_timeout"})
    if unknown:
        raise MalformedRequest(f"breakpoint.{unknown[0]}: unknown field; expected resource, hooks,"
                               " resource_type, timeout, on_timeout")
    resource = body.get("resource")
    if not isinstance(resource, str) or not resource or any(not part for part in resource.split("/")):
        raise MalformedRequest("breakpoint.resource: a resource name, pattern or nested path (a/b)"
                               " is required")
    given = body.get("hooks", list(DEFAULT_HOOKS))
    if isinstance(given, str):
        given = [given]
    if not isinstance(given, list) or not given:
        raise MalformedRequest("breakpoint.hooks: a hook or a non-empty list of hooks is required")
    for index, hook in enumerate(given):
        if not rules.valid_hook(hook):
            raise MalformedRequest(f'breakpoint.hooks[{index}]: Invalid hook type "{hook}" for resource '
                                   f"breakpoint, acceptable hook types are: {HOOK_TYPES}")
    resource_type = body.get("resource_type")
    if resource_type is not None and (not isinstance(resource_type, str) or not resource_type):
        raise MalformedRequest("breakpoint.resource_type: a resource type name is expected")
    timeout = body.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)
                                or timeout <= 0):
        raise MalformedRequest("breakpoint.timeout: a number of seconds greater than 0 is expected")
    on_timeout = body.get("on_timeout", "fail")
    if on_timeout not in rules.ON_TIMEOUT:
        raise MalformedRequest(f"breakpoint.on_timeout: one of {', '.join(rules.ON_TIMEOUT)} is expected")
    return rules.Breakpoint(id=str(uuid.uuid4()), resource=resource, hooks=tuple(dict.fromkeys(given)),
                            resource_type=resource_type, timeout_seconds=None if timeout is None
                            else float(timeout), on_timeout=on_timeout)


def breakpoint_view(bp: rules.Breakpoint) -> dict[str, Any]:
    return {"id": bp.id, "resource": bp.resource, "hooks": list(bp.hooks), "resource_type": bp.resource_type,
            "timeout": bp.timeout_seconds, "on_timeout": bp.on_timeout}


async def list_breakpoints(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = await breakpoints.for_stack(conn, stack.id)
    return json_response({"breakpoints": [breakpoint_view(b) for b in found]})


async def set_breakpoint(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    bp = breakpoint_from(await json_body(request))
    async with request.app[RUNTIME].pool.acquire() as conn:
        await breakpoints.add(conn, stack.id, bp)
    return json_response({"breakpoint": breakpoint_view(bp)}, status=201)


async def clear_breakpoints(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        await breakpoints.remove(conn, stack.id)
    return web.Response(status=204)


async def clear_breakpoint(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    bp_id = path_uuid(request, "breakpoint_id", "Breakpoint")
    async with request.app[RUNTIME].pool.acquire() as conn:
        if not await breakpoints.remove(conn, stack.id, bp_id):
            raise EntityNotFound("Breakpoint", request.match_info["breakpoint_id"])
    return web.Response(status=204)


async def paused_nodes(request: web.Request, stack: stacks.StackRow) -> list[dict[str, Any]]:
    """The nodes waiting at hooks in the stack and those nested in it, with their path from it."""
    async with request.app[RUNTIME].pool.acquire() as conn:
        nested = await stacks.nested_tree(conn, stack.id, 2**31 - 1)  # parents first
        tree = {stack.id: stack} | {s.id: s for s in nested}
        waiting = await hooks.waiting(conn, list(tree))
        owner = await resources.owners(conn, list(tree), [str(s.id) for s in nested]) if nested else {}
    paths: dict[uuid.UUID, tuple[str, ...]] = {stack.id: ()}
    for child in nested:
        parent = paths.get(child.parent_id) if child.parent_id is not None else None
        paths[child.id] = (*(parent or ()), owner.get(str(child.id), child.name))
    return [{"resource": "/".join((*paths.get(h.stack_id, ()), h.resource_name)),
             "resource_name": h.resource_name, "stack_id": str(h.stack_id),
             "stack_name": tree[h.stack_id].name, "hook": h.hook, "action": h.action, "source": h.source,
             "since": h.reached_at.isoformat(), "deadline": h.deadline.isoformat() if h.deadline else None,
             "on_timeout": h.on_timeout}
            for h in waiting]


async def pending(request: web.Request, stack: stacks.StackRow, row: resources.ResourceRow
                  ) -> dict[str, Any] | None:
    """Where a resource waits, and the properties its action is about to use (None: not paused).

    Before a create or update these are the template's, resolved against the
    stack as it is now and checked as the worker will check them; at any other
    hook, the ones last applied.
    """
    async with request.app[RUNTIME].pool.acquire() as conn:
        waiting = await hooks.waiting(conn, [stack.id], resource_name=row.name)
        if not waiting:
            return None
        at = waiting[0]
        properties: Any = row.properties
        about_to_apply = at.action in (Action.CREATE, Action.UPDATE) and (
            at.hook.startswith("pre-") or ":" in at.hook)
        if about_to_apply and stack.template_id is not None:
            raw = await templates.get(conn, stack.template_id)
            evaluator = evaluation(request)
            required = await evaluator.run(_required, raw, stack, row.name)
            if required is not None:
                current = await resources.current_by_names(conn, stack.id, required)
                try:
                    properties = await evaluator.run(
                        _about_to_apply, raw, stack, row.name, request.app[REGISTRY],
                        references={n: r.reference for n, r in current.items()},
                        attributes={n: r.attributes for n, r in current.items()})
                except Exception as exc:  # what the action will fail with, shown instead
                    properties = {"error": f"{type(exc).__name__}: {exc}"}
    return {"hook": at.hook, "action": at.action, "source": at.source, "since": at.reached_at.isoformat(),
            "deadline": at.deadline.isoformat() if at.deadline else None, "properties": properties}


def _desired(raw: templates.RawTemplate, stack: stacks.StackRow) -> desired.Desired:
    return desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                        stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)


def _required(raw: templates.RawTemplate, stack: stacks.StackRow, name: str) -> AbstractSet[str] | None:
    """What the resource reads of the others (None: the template no longer has it); in the pool."""
    want = _desired(raw, stack)
    return want.definition.required(name) if name in want.definition.resources else None


def _about_to_apply(raw: templates.RawTemplate, stack: stacks.StackRow, name: str, registry: Registry, *,
                    references: dict[str, Any], attributes: dict[str, Any]) -> Any:
    """The properties the resource's action will apply, checked as the worker checks them; in the pool."""
    want = _desired(raw, stack)
    plugin = registry.implementing(want.definition.resources[name].type, resource_name=name,
                                   environment=want.environment.registry)
    data = StaticResourceData(references, attributes)
    return plugin.validate(StackResolver(want.definition, data).properties(name), resource_name=name)


async def list_paused(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    return json_response({"paused": await paused_nodes(request, stack)})


async def _release(request: web.Request, mode: rules.HookMode, by: str) -> web.Response:
    stack = await lookup.stack_of(request)
    rt = request.app[RUNTIME]
    released = await pauses.release_tree(rt.pool, rt.bus, stack, by=by, mode=mode)
    return json_response({"released": [
        {"stack_id": r.stack_id, "stack_name": r.stack_name, "resource_name": r.resource_name, "hook": r.hook}
        for r in released]})


async def step(request: web.Request) -> web.Response:
    return await _release(request, rules.HookMode.STEP, "step")


async def continue_(request: web.Request) -> web.Response:
    return await _release(request, rules.HookMode.RUN, "continue")


def add_routes(app: web.Application, one: str) -> None:
    r = app.router
    r.add_get(f"{one}/breakpoints", list_breakpoints)
    r.add_post(f"{one}/breakpoints", set_breakpoint)
    r.add_delete(f"{one}/breakpoints", clear_breakpoints)
    r.add_delete(f"{one}/breakpoints/{{breakpoint_id}}", clear_breakpoint)
    r.add_get(f"{one}/paused", list_paused)
    r.add_post(f"{one}/step", step)
    r.add_post(f"{one}/continue", continue_)
