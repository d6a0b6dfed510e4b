"""``/v1/{project_id}/stacks``: list, create, preview, show, update, delete and a stack's stored parts."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, NamedTuple, TypeAlias

from aiohttp import web

from libs import operations
from libs.db import stacks, templates
from libs.engine import desired
from libs.engine.status import Status
from libs.template import errors
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api import (
    bodies,
    breakpoints_api,
    drift_api,
    event_stream,
    lookup,
    policy,
    previews,
    resources_api,
    snapshots_api,
    software_configs_api,
    software_deployments_api,
    subscriptions_api,
    views,
)
from services.api.bodies import limits_of
from services.api.context import context
from services.api.http import (
    evaluation,
    json_body,
    json_response,
    parse_bool,
    query_bool,
    query_int,
    query_marker,
    query_sort_desc,
)
from services.api.keys import CLOUD_LOOKUPS, REGISTRY, RUNTIME, SETTINGS

PREFIX = "/v1/{project_id}"
LIST_PARAMS = frozenset({"limit", "marker", "sort_keys", "sort_dir", "show_deleted", "show_nested",
                         "show_hidden", "tags", "tags_any", "not_tags", "not_tags_any", "with_count",
                         "global_tenant", "id", "name", "status", "action", "tenant", "username",
                         "owner_id"})


def _list_query(request: web.Request) -> stacks.ListQuery:
    q = request.query
    filters = {k: q.getall(k) for k in stacks.FILTER_COLUMNS if k in q}
    sort_key = q.get("sort_keys", "created_at")
    if sort_key not in stacks.SORT_COLUMNS:
        raise MalformedRequest(f"Sort key {sort_key} is not supported; use one of "
                               "stack_name, stack_status, creation_time, updated_time.")
    sort_desc = query_sort_desc(request)
    marker = query_marker(request, "Stack")

    def tags(key: str) -> list[str]:
        return [t for v in q.getall(key, []) for t in v.split(",") if t]

    everyone = query_bool(request, "global_tenant")
    if everyone and not context(request).is_admin:
        raise policy.Forbidden("stacks:global_index")
    return stacks.ListQuery(
        project=None if everyone else context(request).project, limit=query_int(request, "limit"),
        marker=marker,
        sort_key=sort_key, sort_desc=sort_desc, filters=filters,
        show_deleted=query_bool(request, "show_deleted"), show_nested=query_bool(request, "show_nested"),
        tags=tags("tags"), tags_any=tags("tags_any"), not_tags=tags("not_tags"),
        not_tags_any=tags("not_tags_any"))


async def list_stacks(request: web.Request) -> web.Response:
    query = _list_query(request)
    base = lookup.base_url(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await stacks.list_stacks(conn, query)
        count = await stacks.count_stacks(conn, query) if query_bool(request, "with_count") else None
    body: dict[str, Any] = {"stacks": [views.stack_summary(base, r, with_project=query.project is None)
                                       for r in rows]}
    if query.limit is not None and len(rows) == query.limit and rows:
        params = {k: v for k, v in request.query.items() if k != "marker"}
        params["marker"] = str(rows[-1].id)
        body["links"] = [{"href": str(request.url.with_query(params)), "rel": "next"}]
    if count is not None:
        body["count"] = count
    return json_response(body)


async def list_detail(request: web.Request) -> web.Response:
    query = _list_query(request)
    base = lookup.base_url(request)
    async with request.app[RUNTIME].pool.acquire() as conn:
        rows = await stacks.list_stacks(conn, query)
    return json_response({"stacks": [await _detail(request, base, r, resolve_outputs=True) for r in rows]})


async def create(request: web.Request) -> web.Response:
    body = await json_body(request)
    if "converge" in body:
        raise MalformedRequest("Parameter 'converge' is not allowed on create")
    name = bodies.stack_name(body)
    ctx = context(request)
    rt = request.app[RUNTIME]
    adopt = bodies.adopt_data(body)
    if adopt is not None and not request.app[SETTINGS].api.enable_stack_adopt:
        raise errors.NotSupported("Stack Adopt")
    if adopt is not None:
        # Heat adopts with the abandoned stack's own template and environment unless given.
        body = {"template": adopt.get("template"), "environment": adopt.get("environment"),
                "files": adopt.get("files") or {}, **{k: v for k, v in body.items() if v is not None}}
    evaluator = evaluation(request)
    given = bodies.stack_request(body)
    stack_request, limits = await bodies.parse(evaluator, given, limits_of(request))
    policy.enforce_resource_types(stack_request.template, ctx.roles)
    row = await operations.create_stack(
        rt.pool, rt.bus, project=ctx.project, name=name, stack_request=stack_request,
        options=bodies.options(body), limits=limits,
        builtin_types=request.app[REGISTRY].types(), registry=request.app[REGISTRY], adopt_data=adopt,
        evaluation=evaluator, cloud=request.app[CLOUD_LOOKUPS], json_request=not bodies.has_text(given))
    href = views.stack_url(lookup.base_url(request), row)
    return json_response({"stack": {"id": str(row.id), "links": [{"href": href, "rel": "self"}]}},
                         status=201, headers={"Location": href})


class TemplateSummary(NamedTuple):
    """What stack show takes from the stack's stored template."""

    description: str
    parameters: Mapping[str, str]


# (template id, stack id, stack name, project): every input of the summary but the template row, which is
# immutable once stored (libs/db/templates.py), so an entry never goes stale.
SummaryKey: TypeAlias = tuple[uuid.UUID, uuid.UUID, str, str]


class TemplateSummaries:
    """A bounded LRU of ``TemplateSummary``: loading a whole template on every stack show is the cost."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[SummaryKey, TemplateSummary] = OrderedDict()

    def get(self, key: SummaryKey) -> TemplateSummary | None:
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
        return found

    def put(self, key: SummaryKey, summary: TemplateSummary) -> None:
        self._entries[key] = summary
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)


# Here rather than in keys.py: keys.py cannot import this module, which imports keys.py.
TEMPLATE_SUMMARIES = web.AppKey("template_summaries", TemplateSummaries)
_SUMMARIES_SIZE = 512


async def _summary(request: web.Request, row: stacks.StackRow, template_id: uuid.UUID) -> TemplateSummary:
    cache = request.app[TEMPLATE_SUMMARIES]
    key = (template_id, row.id, row.name, row.project)
    found = cache.get(key)
    if found is not None:
        return found
    async with request.app[RUNTIME].pool.acquire() as conn:
        raw = await templates.get(conn, template_id)
    try:
        description, parameters = await evaluation(request).run(_summarized, raw, row.name, str(row.id),
                                                                     row.project)
        summary = TemplateSummary(description, MappingProxyType(parameters))
    except Exception:  # a stored template that no longer loads still shows its stack
        described = raw.template.get("description") or "No description"
        summary = TemplateSummary(str(described), MappingProxyType({}))
    # Loading is a pure function of the key's parts, so its failure is as lasting as its success.
    cache.put(key, summary)
    return summary


def _summarized(raw: templates.RawTemplate, name: str, stack_id: str, project: str
                ) -> tuple[str, dict[str, str]]:
    """A stored template's description and parameters as stack show gives them (in the pool)."""
    want = desired.load(raw.template, raw.files, raw.environment, stack_name=name, stack_id=stack_id,
                        project_id=project, facade=raw.facade)
    return want.template.description, dict(want.parameters.display())


async def _detail(request: web.Request, base: str, row: stacks.StackRow, *, resolve_outputs: bool
                  ) -> dict[str, Any]:
    summary = TemplateSummary("", MappingProxyType({}))
    if row.template_id is not None:
        summary = await _summary(request, row, row.template_id)
    outputs = (row.outputs or []) if resolve_outputs else None
    return views.stack_detail(base, row, description=summary.description, parameters=summary.parameters,
                              outputs=outputs)


async def show(request: web.Request) -> web.Response:
    row = await lookup.stack_of(request)
    resolve = query_bool(request, "resolve_outputs", True)
    shown = await _detail(request, lookup.base_url(request), row, resolve_outputs=resolve)
    # Ember's debugger: a paused stack stays *_IN_PROGRESS, as Heat's does, and says where it waits.
    paused = await breakpoints_api.paused_nodes(request, row) if row.status == Status.IN_PROGRESS else []
    shown["ember_paused"] = paused
    if paused:
        names = ", ".join(dict.fromkeys(p["resource"] for p in paused))
        shown["stack_status_reason"] = f"Paused at breakpoints: {names}"
    return json_response({"stack": shown})


async def _update(request: web.Request, *, existing: bool) -> web.Response:
    row = await lookup.stack_of(request)
    body = await json_body(request)
    rt = request.app[RUNTIME]
    # Heat's PUT makes the stack anew from the body: tags it leaves out (or null) are cleared.
    base = operations.Options(disable_rollback=row.disable_rollback, timeout_mins=row.timeout_mins,
                              tags=(row.tags or []) if existing else [])
    clear = body.get("clear_parameters") or []
    if not isinstance(clear, list):
        raise MalformedRequest("clear_parameters: expected a list of parameter names")
    evaluator = evaluation(request)
    given = bodies.stack_request(body, template_required=not existing)
    stack_request, limits = await bodies.parse(evaluator, given, limits_of(request))
    policy.enforce_resource_types(stack_request.template, context(request).roles)
    await operations.update_stack(
        rt.pool, rt.bus, row, stack_request=stack_request,
        options=bodies.options(body, base=base), existing=existing, clear_parameters=clear,
        converge=parse_bool("converge", body.get("converge", False)), limits=limits,
        builtin_types=request.app[REGISTRY].types(), registry=request.app[REGISTRY], evaluation=evaluator,
        cloud=request.app[CLOUD_LOOKUPS], json_request=not bodies.has_text(given))
    return web.Response(status=202)


async def update_put(request: web.Request) -> web.Response:
    return await _update(request, existing=False)


async def update_patch(request: web.Request) -> web.Response:
    return await _update(request, existing=True)


async def delete(request: web.Request) -> web.Response:
    row = await lookup.stack_of(request)
    if row.deleted_at is not None:
        raise EntityNotFound("Stack", row.name)
    rt = request.app[RUNTIME]
    await operations.delete_stack(rt.pool, rt.bus, row)
    return web.Response(status=204)


async def _stored(request: web.Request) -> templates.RawTemplate:
    row = await lookup.stack_of(request)
    if row.template_id is None:
        raise EntityNotFound("Stack", row.name)
    async with request.app[RUNTIME].pool.acquire() as conn:
        return await templates.get(conn, row.template_id)


async def template(request: web.Request) -> web.Response:
    return json_response((await _stored(request)).template)


async def environment(request: web.Request) -> web.Response:
    return json_response((await _stored(request)).environment)


async def files(request: web.Request) -> web.Response:
    return json_response((await _stored(request)).files)


async def outputs(request: web.Request) -> web.Response:
    row = await lookup.stack_of(request)
    return json_response({"outputs": [{"output_key": o["output_key"], "description": o.get("description")}
                                      for o in (row.outputs or [])]})


async def output(request: web.Request) -> web.Response:
    row = await lookup.stack_of(request)
    key = request.match_info["output_key"]
    for item in row.outputs or []:
        if item["output_key"] == key:
            return json_response({"output": item})
    raise EntityNotFound("Output", key)


def add_routes(app: web.Application) -> None:
    app[TEMPLATE_SUMMARIES] = TemplateSummaries(_SUMMARIES_SIZE)
    r = app.router
    r.add_get(f"{PREFIX}/stacks", list_stacks)
    r.add_post(f"{PREFIX}/stacks", create)
    r.add_get(f"{PREFIX}/stacks/detail", list_detail)
    r.add_post(f"{PREFIX}/stacks/preview", previews.preview_create)
    lookup.add_redirects(app, PREFIX)
    one = f"{PREFIX}/stacks/{{stack_name}}/{{stack_id}}"
    r.add_get(one, show)
    r.add_put(one, update_put)
    r.add_patch(one, update_patch)
    r.add_delete(one, delete)
    r.add_put(f"{one}/preview", previews.preview_put)
    r.add_patch(f"{one}/preview", previews.preview_patch)
    r.add_get(f"{one}/template", template)
    r.add_get(f"{one}/environment", environment)
    r.add_get(f"{one}/files", files)
    r.add_get(f"{one}/outputs", outputs)
    r.add_get(f"{one}/outputs/{{output_key}}", output)
    r.add_get(f"{one}/events/stream", event_stream.stream)
    resources_api.add_routes(app, one)
    breakpoints_api.add_routes(app, one)
    subscriptions_api.add_routes(app, PREFIX, one)
    snapshots_api.add_routes(app, one)
    drift_api.add_routes(app, one)
    software_configs_api.add_routes(app, PREFIX)
    software_deployments_api.add_routes(app, PREFIX)
