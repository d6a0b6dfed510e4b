"""Heat's previews: ``POST /stacks/preview`` (a create) and ``PUT``/``PATCH .../preview`` (an update)."""

from __future__ import annotations

import datetime
from typing import Any

import orjson
from aiohttp import web

from libs import operations, update_preview
from libs.cloud.lookups import CloudAnswers
from libs.cloud.validation import with_lookups
from libs.engine import preview
from libs.resources import nesting
from libs.resources.registry import Registry
from libs.resources.validation import plugin_checks
from libs.template import request as stack_request_lib
from libs.template.limits import Limits
from libs.template.resolution import StackResolver
from services.api import bodies, lookup, policy, views
from services.api.bodies import limits_of
from services.api.context import context
from services.api.http import evaluation, json_body, json_response, query_bool
from services.api.keys import CLOUD_LOOKUPS, REGISTRY, RUNTIME


async def preview_create(request: web.Request) -> web.Response:
    """Heat's create preview: the stack as it would be made, each nesting resource as its nested stack."""
    body = await json_body(request)
    name = bodies.stack_name(body)
    options = bodies.options(body)
    project = context(request).project
    roles = context(request).roles
    answer = await with_lookups(request.app[CLOUD_LOOKUPS], project, lambda cloud: evaluation(request).run(
        _previewed_json, bodies.stack_request(body), limits_of(request), request.app[REGISTRY], name=name,
        project=project, options=options, base=lookup.base_url(request), cloud=cloud, roles=roles))
    return web.Response(body=answer, content_type="application/json")


def _previewed_json(given: stack_request_lib.StackRequest, limits: Limits, registry: Registry, *, name: str,
                    project: str, options: operations.Options, base: str, cloud: CloudAnswers,
                    roles: frozenset[str] = frozenset({"admin"})) -> bytearray:
    """The answer's body, written as JSON in the pool (pure). A group's preview lists every member,
    as Heat's does: each is written as it is formatted, never all of them as objects at once, and
    the text crosses back in one piece where the objects would be rebuilt one by one in the api."""
    head, planned = _previewed(given, limits, registry, name=name, project=project, options=options,
                               base=base, cloud=cloud, roles=roles)
    # "resources" is the body's last key: its value goes in before the two closing braces.
    out = bytearray(orjson.dumps({"stack": head})[:-2])
    out += b',"resources":'
    views.write_preview_resources(out, project, planned)
    out += b"}}"
    return out  # as it is: a copy would be as large again


def _previewed(given: stack_request_lib.StackRequest, limits: Limits, registry: Registry, *, name: str,
               project: str, options: operations.Options, base: str, cloud: CloudAnswers,
               roles: frozenset[str]) -> tuple[dict[str, Any], preview.PlannedStack]:
    """The body of a create preview but its ``resources``, and what they show."""
    stack_request, limits = bodies.parsed(given, limits)
    policy.enforce_resource_types(stack_request.template, roles)
    with cloud.checking() as custom:
        loaded = stack_request_lib.load(stack_request, stack_name=name, stack_id="None",
                                        project_id=project, limits=limits, builtin_types=registry.types(),
                                        checks=plugin_checks(registry, custom_constraints=custom),
                                        custom_constraints=custom)
    operations.check_nested(loaded, registry, project=project, stack_name=name, limits=limits)
    planned = preview.create_preview(loaded, nesting.Expansion(registry, project), stack_name=name)
    resolver = StackResolver(loaded.definition, preview.preview_data(loaded, registry))
    return {
        "id": "None", "stack_name": name,
        "links": [{"href": f"{base}/stacks/{name}/None", "rel": "self"}],
        "description": loaded.template.description, "template_description": loaded.template.description,
        "creation_time": views.isotime(datetime.datetime.now(datetime.UTC)), "updated_time": None,
        "deletion_time": None, "stack_owner": None, "parent": None, "stack_user_project_id": project,
        "tags": list(options.tags), "parameters": loaded.parameters.display(),
        "disable_rollback": options.disable_rollback, "timeout_mins": options.timeout_mins,
        "capabilities": [], "notification_topics": [], "outputs": resolver.outputs(),
    }, planned


async def _preview_update(request: web.Request, *, existing: bool) -> web.Response:
    row = await lookup.stack_of(request)
    body = await json_body(request)
    evaluator = evaluation(request)
    stack_request, limits = await bodies.parse(
        evaluator, bodies.stack_request(body, template_required=not existing), limits_of(request))
    policy.enforce_resource_types(stack_request.template, context(request).roles)
    changes = await update_preview.preview_update(
        request.app[RUNTIME].pool, row, stack_request=stack_request,
        registry=request.app[REGISTRY], existing=existing, limits=limits,
        clear_parameters=body.get("clear_parameters") or [],
        show_nested=query_bool(request, "show_nested"), evaluation=evaluator)

    def shown(entry: update_preview.Entry) -> dict[str, Any]:
        if isinstance(entry, update_preview.Existing):
            return views.existing_resource(row.project, entry.stack, entry.row, needed_by=entry.needed_by,
                                           parent_resource=entry.parent_resource, nested=entry.nested)
        return views.planned_resource(row.project, entry.stack_name, entry.stack_id, entry.resource,
                                      parent_resource=entry.parent_resource, with_properties=False)

    return json_response({"resource_changes": {key: [shown(e) for e in changes[key]]
                                               for key in update_preview.KEYS}})


async def preview_put(request: web.Request) -> web.Response:
    return await _preview_update(request, existing=False)


async def preview_patch(request: web.Request) -> web.Response:
    return await _preview_update(request, existing=True)
