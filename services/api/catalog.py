"""What the service offers, not tied to a stack: validate, resource types, template versions, services.

The routes under ``/v1/{project_id}`` that Heat's API answers without a
stack, each with Heat's bodies and errors. Only the methods Heat takes are
registered, so aiohttp answers any other with the 405 fault.
"""

from __future__ import annotations

from aiohttp import web

from libs.template import versions
from services.api import resource_types, service_info, template_validation
from services.api.http import json_response, query_bool

PREFIX = "/v1/{project_id}"


async def template_versions(_req: web.Request) -> web.Response:
    return json_response(versions.template_versions_api())


async def template_functions(req: web.Request) -> web.Response:
    with_condition = query_bool(req, "with_condition_func")
    return json_response(versions.functions_api(req.match_info["version"], with_condition))


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post(f"{PREFIX}/validate", template_validation.validate)
    r.add_get(f"{PREFIX}/resource_types", resource_types.list_types)
    r.add_get(f"{PREFIX}/resource_types/{{type_name}}", resource_types.show_type)
    r.add_get(f"{PREFIX}/resource_types/{{type_name}}/template", resource_types.type_template)
    r.add_get(f"{PREFIX}/template_versions", template_versions)
    r.add_get(f"{PREFIX}/template_versions/{{version}}/functions", template_functions)
    r.add_get(f"{PREFIX}/build_info", service_info.build_info)
    r.add_get(f"{PREFIX}/services", service_info.service_list)
