"""What the service offers, not tied to a stack: validate, resource types, template versions, services.

``/v1/{project_id}/validate``, ``/resource_types``, ``/template_versions``,
``/build_info`` and ``/services``, with Heat's bodies and errors.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import re
from typing import Any

from aiohttp import web

from libs.db import services
from libs.resources.provider_template import provider_template
from libs.template import errors, request, versions
from services.api import bodies
from services.api.context import context
from services.api.http import BadRequest, Forbidden, json_body, json_response, query_bool
from services.api.keys import REGISTRY, RUNTIME, SETTINGS
from services.api.stacks import limits_of

PREFIX = "/v1/{project_id}"
SUPPORT_STATUSES = ("UNKNOWN", "SUPPORTED", "DEPRECATED", "UNSUPPORTED", "HIDDEN")


class ResourceTypeNotFound(errors.TemplateError):
    error_type = "ResourceTypeNotFound"
    http_status = 404

    def __init__(self, type_name: str) -> None:
        super().__init__(f"The Resource Type ({type_name}) could not be found.")


async def validate(req: web.Request) -> web.Response:
    body = await json_body(req)
    query_bool(req, "show_nested")
    result = request.validate(bodies.stack_request(body), project_id=context(req).project,
                              limits=limits_of(req), builtin_types=req.app[REGISTRY].types())
    return json_response(result)


async def list_types(req: web.Request) -> web.Response:
    registry = req.app[REGISTRY]
    status = req.query.get("support_status")
    if status is not None and status not in SUPPORT_STATUSES:
        raise BadRequest(f'Invalid support status and should be one of {", ".join(SUPPORT_STATUSES)}')
    name = req.query.get("name")
    version = req.query.get("version")
    found = []
    for type_name in registry.types():
        plugin = registry.get(type_name)
        support = plugin.support_status
        if support.status == "HIDDEN" and status != "HIDDEN":
            continue
        if status is not None and support.status != status:
            continue
        if name is not None and not re.match(name, type_name):
            continue
        if version is not None and support.version != version:
            continue
        found.append(plugin)
    if query_bool(req, "with_description"):
        return json_response({"resource_types": [{"resource_type": p.type_name,
                                                  "description": p.description} for p in found]})
    return json_response({"resource_types": [p.type_name for p in found]})


def _plugin(req: web.Request) -> Any:
    type_name = req.match_info["type_name"]
    if type_name not in req.app[REGISTRY]:
        raise ResourceTypeNotFound(type_name)
    return req.app[REGISTRY].get(type_name)


async def show_type(req: web.Request) -> web.Response:
    return json_response(_plugin(req).schema_api(with_description=query_bool(req, "with_description")))


async def type_template(req: web.Request) -> web.Response:
    kind = req.query.get("template_type", "cfn").lower()
    if kind not in ("hot", "cfn"):
        raise BadRequest(f"Template type is not supported: Invalid template type \"{kind}\", valid types "
                         "are: cfn, hot.")
    return json_response(provider_template(_plugin(req), "hot" if kind == "hot" else "cfn"))


async def template_versions(_req: web.Request) -> web.Response:
    return json_response(versions.template_versions_api())


async def functions(req: web.Request) -> web.Response:
    return json_response(versions.functions_api(req.match_info["version"],
                                                query_bool(req, "with_condition_func")))


def _revision() -> str:
    try:
        return importlib.metadata.version("ember")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


async def build_info(_req: web.Request) -> web.Response:
    revision = _revision()
    return json_response({"api": {"revision": revision}, "engine": {"revision": revision}})


def _time(at: datetime.datetime | None) -> str | None:
    return None if at is None else at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")


async def service_list(req: web.Request) -> web.Response:
    if not context(req).is_admin:
        raise Forbidden()
    async with req.app[RUNTIME].pool.acquire() as conn:
        rows = await services.list_all(conn)
    now = datetime.datetime.now(datetime.UTC)
    interval = req.app[SETTINGS].report_interval
    return json_response({"services": [{
        "id": str(r.id), "engine_id": str(r.id), "host": r.host, "hostname": r.hostname,
        "binary": f"ember-{r.service}", "topic": r.topic, "report_interval": int(interval),
        "created_at": _time(r.created_at), "updated_at": _time(r.updated_at),
        "deleted_at": _time(r.deleted_at), "status": "up" if r.is_up(now) else "down",
    } for r in rows]})


def add_routes(app: web.Application) -> None:
    r = app.router
    r.add_post(f"{PREFIX}/validate", validate)
    r.add_get(f"{PREFIX}/resource_types", list_types)
    r.add_get(f"{PREFIX}/resource_types/{{type_name}}", show_type)
    r.add_get(f"{PREFIX}/resource_types/{{type_name}}/template", type_template)
    r.add_get(f"{PREFIX}/template_versions", template_versions)
    r.add_get(f"{PREFIX}/template_versions/{{version}}/functions", functions)
    r.add_get(f"{PREFIX}/build_info", build_info)
    r.add_get(f"{PREFIX}/services", service_list)
