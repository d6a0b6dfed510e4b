"""A stack's resources, events and actions under ``/stacks/{name}/{id}``."""

from __future__ import annotations

import contextlib
import dataclasses
import uuid

from aiohttp import web

from libs import operations, scaling, software_signals, software_views
from libs.db import Conn, events, resources, stacks, templates
from libs.engine.status import Action, Status
from libs.resources import autoscaling
from libs.resources.software_deployment import SoftwareDeployment
from libs.template import attribute_store, errors
from libs.template.environment import Environment
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api import breakpoints_api, hook_clearing, lookup, views
from services.api.http import (
    evaluation,
    json_body,
    json_response,
    json_value,
    parse_bool,
    path_uuid,
    query_bool,
    query_int,
    query_marker,
    query_sort_desc,
    query_texts,
)
from services.api.keys import REGISTRY, RUNTIME

RESOURCE_FILTERS = tuple(sorted({"status", *resources.FILTER_COLUMNS}))
# Heat's parameters, and Ember's paging (limit, marker), which Heat's resource list lacks.
RESOURCE_PARAMS = frozenset({"nested_depth", "with_detail", "limit", "marker", *RESOURCE_FILTERS})
ACTIONS = ("suspend", "resume", "check", "cancel_update", "cancel_without_rollback")


class _Nesting:
    """The resources that nest the stacks of a listed tree, asked once each: a stack's
    ``parent_resource``, and a resource's path from the listed stack (``nest/inner/name``)."""

    def __init__(self, conn: Conn, tree: list[stacks.StackRow]) -> None:
        self._conn = conn
        self._listed = tree[0].id
        self._tree = {s.id: s for s in tree}
        self._names: dict[uuid.UUID, str | None] = {}

    async def name(self, stack: stacks.StackRow) -> str | None:
        if stack.id not in self._names:
            self._names[stack.id] = await resources.nesting_name(self._conn, stack.parent_id, stack.id)
        return self._names[stack.id]

    async def path(self, stack: stacks.StackRow) -> tuple[str, ...]:
        parent = self._tree.get(stack.parent_id) if stack.parent_id is not None else None
        if stack.id == self._listed or parent is None:
            return ()
        return (*await self.path(parent), await self.name(stack) or stack.name)


async def _marker_place(conn: Conn, tree: list[stacks.StackRow], marker: str) -> tuple[int, str]:
    """Where a page after ``marker`` starts: the stack's place in the tree and the name to follow.

    The marker is a resource's name, or, for one in a nested stack (``nested_depth``), its path
    ``nest/name``, as the last item of the previous page gives it; one naming no resource is Heat's 404.
    """
    *through, name = marker.split("/")
    place = 0
    for part in through:
        row = (await resources.current_by_names(conn, tree[place].id, [part])).get(part)
        found = [i for i, s in enumerate(tree) if row is not None and str(s.id) == row.physical_id]
        if not found:
            raise EntityNotFound("Resource", marker)
        place = found[0]
    if not await resources.current_by_names(conn, tree[place].id, [name]):
        raise EntityNotFound("Resource", marker)
    return place, name


async def list_resources(request: web.Request) -> web.Response:
    unknown = sorted(set(request.query) - RESOURCE_PARAMS)
    if unknown:
        raise MalformedRequest(f"Invalid filter parameters {unknown}")
    depth = query_int(request, "nested_depth") or 0
    detail = query_bool(request, "with_detail")
    limit = query_int(request, "limit")
    markers = query_texts(request, "marker")
    filters = {key: query_texts(request, key) for key in RESOURCE_FILTERS if key in request.query}
    paged = limit is not None or bool(markers)
    stack = await lookup.stack_of(request)
    base = lookup.base_url(request)
    shown: list[dict[str, object]] = []
    last: str | None = None
    async with request.app[RUNTIME].pool.acquire() as conn:
        tree = [stack, *await stacks.nested_tree(conn, stack.id, depth)]
        nesting = _Nesting(conn, tree)
        start, after = await _marker_place(conn, tree, markers[-1]) if markers else (0, None)
        for member in tree[start:]:
            room = None if limit is None else limit - len(shown)
            if room == 0:
                break
            rows = await resources.listing(conn, resources.ResourceQuery(
                member.id, filters, paged=paged, after=after, limit=room))
            after = None
            if not rows:
                continue
            needed = await resources.needed_by(conn, member.id, [r.id for r in rows])
            nested = await _nested_names(conn, member.id, rows)
            parent = await nesting.name(member)
            shown += [views.resource(base, member, row, needed_by=needed.get(row.id, []), detail=detail,
                                     nested=nested.get(row.physical_id or ""), parent_resource=parent)
                      for row in rows]
            last = "/".join((*await nesting.path(member), rows[-1].name))
    body: dict[str, object] = {"resources": shown}
    if limit and len(shown) == limit and last is not None:
        # As Ember's stack list: the next page's URL, its marker the last resource's path.
        params = [(k, v) for k, v in request.query.items() if k != "marker"]  # repeated filters kept
        body["links"] = [{"href": str(request.url.with_query([*params, ("marker", last)])), "rel": "next"}]
    return json_response(body)


async def _nested_names(conn: Conn, stack_id: uuid.UUID, rows: list[resources.ResourceRow]) -> dict[str, str]:
    """Physical id -> name of the stacks these resources of the stack nest."""
    ids = set()
    for row in rows:
        with contextlib.suppress(ValueError, TypeError):  # a cloud's physical id need be no uuid
            ids.add(uuid.UUID(row.physical_id or ""))
    return {str(k): v for k, v in (await stacks.children(conn, stack_id, ids)).items()}


async def _resource(request: web.Request) -> tuple[stacks.StackRow, resources.ResourceRow, list[str]]:
    """The resource the URL names, found by index, and the names of those that need it."""
    stack = await lookup.stack_of(request)
    name = request.match_info["resource_name"]
    if "\0" in name:  # no resource is so named, and PostgreSQL cannot compare it
        raise EntityNotFound("Resource", name)
    async with request.app[RUNTIME].pool.acquire() as conn:
        found = (await resources.current_by_names(conn, stack.id, [name])).get(name)
        if found is None:  # Heat's PATCH also finds a resource by its physical id.
            found = await resources.current_by_physical_id(conn, stack.id, name)
        if found is None:
            raise EntityNotFound("Resource", name)
        needed = await resources.needed_by(conn, stack.id, [found.id])
    return stack, found, needed.get(found.id, [])


async def show_resource(request: web.Request) -> web.Response:
    stack, row, needed = await _resource(request)
    attributes = attribute_store.shown(row.attributes)
    for name in request.query.getall("with_attr", []):
        attributes.setdefault(name, None)
    async with request.app[RUNTIME].pool.acquire() as conn:
        nested = await _nested_names(conn, stack.id, [row])
        nesting = await resources.nesting_name(conn, stack.parent_id, stack.id)
    shown = views.resource(lookup.base_url(request), stack, row, needed_by=needed, detail=True,
                           attributes=attributes, nested=nested.get(row.physical_id or ""),
                           parent_resource=nesting)
    paused = await breakpoints_api.pending(request, stack, row)  # Ember's debugger
    if paused is not None:
        shown["ember_paused"] = paused
    return json_response({"resource": shown})


# Types whose metadata carries their deployments, as Heat pushes them into a server's metadata.
SERVER_TYPES = frozenset({"OS::Nova::Server"})


async def metadata(request: web.Request) -> web.Response:
    stack, row, _ = await _resource(request)
    shown: dict[str, object] = {}
    if row.type in SERVER_TYPES and row.physical_id:
        # Computed as it is read (Heat writes it at each deployment change): what the server's agent
        # polls here is always the deployments list as it stands.
        async with request.app[RUNTIME].pool.acquire() as conn:
            shown["deployments"] = await software_views.server_deployments(
                conn, row.physical_id, stack.project)
        # Where its agent polls, as the server was told when it was made (SOFTWARE_CONFIG only).
        collect = attribute_store.shown(row.attributes).get("os_collect_config")
        if collect:
            shown["os-collect-config"] = collect
    return json_response({"metadata": shown})


async def _scale_by_policy(request: web.Request, stack: stacks.StackRow,
                           policy: resources.ResourceRow) -> None:
    props = policy.properties or {}
    rt = request.app[RUNTIME]
    async with rt.pool.acquire() as conn:
        group = await scaling.find_group(conn, stack.id, str(props.get("auto_scaling_group_id")))
        await events.add(conn, stack_id=stack.id, resource_name=policy.name,
                         physical_resource_id=policy.physical_id, resource_type=policy.type, action="SIGNAL",
                         status=Status.COMPLETE, reason=f"Signal: scaling {props.get('adjustment_type')} by "
                                                   f"{props.get('scaling_adjustment')}")
    if group is None:
        raise EntityNotFound("Resource", str(props.get("auto_scaling_group_id")))
    await scaling.scale(rt.pool, rt.bus, request.app[REGISTRY], stack, group=group,
                        evaluation=evaluation(request),
                        change=scaling.Adjustment(
                            adjustment_type=str(props["adjustment_type"]),
                            adjustment=float(props["scaling_adjustment"]),
                            min_adjustment_step=props.get("min_adjustment_step"),
                            cooldown=props.get("cooldown")))


class ActionNotSupported(errors.TemplateError):
    """Heat's ``ResourceActionNotSupported``."""

    error_type = "ResourceActionNotSupported"

    def __init__(self, action: str) -> None:
        super().__init__(f"{action} is not supported for resource.")


async def signal(request: web.Request) -> web.Response:
    stack, row, _ = await _resource(request)
    details = await json_value(request)
    hook = hook_clearing.unset_hook_of(details)
    if hook is not None:  # any resource type, as in Heat
        return await hook_clearing.unset_hook(request, stack, row, hook)
    pool = request.app[RUNTIME].pool
    environment = None
    if stack.template_id is not None:
        async with pool.acquire() as conn:
            raw = await templates.get(conn, stack.template_id)
        environment = Environment.from_dict(raw.environment).registry
    try:
        plugin = request.app[REGISTRY].implementing(row.type, resource_name=row.name, environment=environment)
    except KeyError:
        raise ActionNotSupported("signal") from None
    if not plugin.accepts_signals:
        raise ActionNotSupported("signal")
    if isinstance(plugin, autoscaling.ScalingPolicy):
        await _scale_by_policy(request, stack, row)
        return web.Response(status=200)
    if isinstance(plugin, SoftwareDeployment):
        async with pool.acquire() as conn:
            await software_signals.signal(conn, stack, row, details)
        return web.Response(status=200)
    for _ in range(10):  # a compare-and-set lost to another signal: read again and redo
        changes, reason = plugin.signal(row.data, details)
        data = {k: v for k, v in {**row.data, **changes}.items() if v is not None}
        async with pool.acquire() as conn, conn.transaction():
            if await resources.write(conn, row, data=data) is not None:
                await events.add(conn, stack_id=stack.id, resource_name=row.name,
                                 physical_resource_id=row.physical_id, resource_type=row.type,
                                 action="SIGNAL", status=Status.COMPLETE, reason=reason)
                return web.Response(status=200)
            fresh = (await resources.get_many(conn, [row.id])).get(row.id)
        if fresh is None:
            raise EntityNotFound("Resource", row.name)
        row = fresh
    raise web.HTTPConflict(text="the resource kept changing; signal again")


async def mark_unhealthy(request: web.Request) -> web.Response:
    stack, row, _ = await _resource(request)
    body = await json_body(request)
    extra = sorted(set(body) - {"mark_unhealthy", "resource_status_reason"})
    if extra or "mark_unhealthy" not in body:
        raise MalformedRequest(f"Invalid parameters {extra}" if extra else "Missing required mark_unhealthy")
    unhealthy = parse_bool("mark_unhealthy", body["mark_unhealthy"])
    reason = str(body.get("resource_status_reason") or "")
    status = Status.FAILED if unhealthy else Status.COMPLETE
    if unhealthy or (row.action, row.status) == (Action.CHECK, Status.FAILED):
        reason = reason or ("state changed by resource_mark_unhealthy" if unhealthy else "")
        async with request.app[RUNTIME].pool.acquire() as conn, conn.transaction():
            written = await resources.write(conn, row, action=Action.CHECK, status=status,
                                            status_reason=reason)
            if written is None:
                raise web.HTTPConflict(text="the resource is changing; try again")
            await events.add(conn, stack_id=stack.id, resource_name=row.name,
                             physical_resource_id=row.physical_id, resource_type=row.type,
                             action=Action.CHECK, status=status, reason=reason)
    return json_response({})


def _event_query(request: web.Request, stack: stacks.StackRow, resource_name: str | None
                 ) -> events.EventQuery:
    sort_desc = query_sort_desc(request)
    marker = query_marker(request, "Event")
    names = [resource_name] if resource_name else query_texts(request, "resource_name")
    return events.EventQuery(stack_id=stack.id, limit=query_int(request, "limit"), marker=marker,
                             sort_desc=sort_desc, resource_name=names,
                             resource_status=query_texts(request, "resource_status"),
                             resource_action=query_texts(request, "resource_action"),
                             resource_type=query_texts(request, "resource_type"))


async def list_events(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    resource_name = request.match_info.get("resource_name")
    if resource_name is not None and "\0" in resource_name:
        raise EntityNotFound("Resource", resource_name)
    depth = query_int(request, "nested_depth") or 0
    async with request.app[RUNTIME].pool.acquire() as conn:
        tree = {s.id: s for s in await stacks.nested_tree(conn, stack.id, 0 if resource_name else depth)}
        query = dataclasses.replace(_event_query(request, stack, resource_name), nested=tuple(tree))
        rows = await events.list_events(conn, query)
    if resource_name and not rows and request.query.get("marker") is None:
        raise EntityNotFound("Resource", resource_name)
    base = lookup.base_url(request)
    shown = []
    for row in rows:
        body = views.event(base, tree.get(row.stack_id, stack), row)
        if depth:
            # Heat marks where a nested stack's event belongs: its root stack.
            body["links"].append({"href": views.stack_url(base, stack), "rel": "root_stack"})
        shown.append(body)
    return json_response({"events": shown})


async def show_event(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    event_id = path_uuid(request, "event_id", "Event")
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await events.get(conn, stack.id, event_id)
    if row is None or row.resource_name != request.match_info["resource_name"]:
        raise EntityNotFound("Event", str(event_id))
    return json_response({"event": views.event(lookup.base_url(request), stack, row, detail=True)})


async def action(request: web.Request) -> web.Response:
    stack = await lookup.stack_of(request)
    body = await json_body(request)
    if len(body) != 1:
        raise MalformedRequest("Multiple actions specified" if body else "No action specified")
    name = next(iter(body))
    if name not in ACTIONS:
        raise MalformedRequest(f"Invalid action {name} specified")
    rt = request.app[RUNTIME]
    if name in ("cancel_update", "cancel_without_rollback"):
        await operations.cancel_update(rt.pool, rt.bus, stack, rollback=name == "cancel_update")
    else:
        await operations.stack_action(rt.pool, rt.bus, stack, Action(name.upper()))
    return web.Response(status=200)


def add_routes(app: web.Application, one: str) -> None:
    r = app.router
    r.add_get(f"{one}/resources", list_resources)
    res = f"{one}/resources/{{resource_name}}"
    r.add_get(res, show_resource)
    r.add_patch(res, mark_unhealthy)
    r.add_get(f"{res}/metadata", metadata)
    r.add_post(f"{res}/signal", signal)
    r.add_get(f"{res}/events", list_events)
    r.add_get(f"{res}/events/{{event_id}}", show_event)
    r.add_get(f"{one}/events", list_events)
    r.add_post(f"{one}/actions", action)
