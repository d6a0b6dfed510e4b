"""``/resource_types``: which resource types there are, each one's schema and provider template.

Heat's filters and errors: ``name`` is a regular expression matched at the
start of the name (one that does not compile matches nothing), hidden types
are never listed, shown or generated, and an unknown type is Heat's
``EntityNotFound``. A type its ``resource_types:<type>`` policy keeps for admins
(:data:`services.api.policy.ADMIN_RESOURCE_TYPES`) is not listed to others, and
showing it is their ``Forbidden``, checked first (measured against Heat on Keystone).
"""

from __future__ import annotations

import re

from aiohttp import web

from libs.resources.base import ResourceType
from libs.template import errors
from libs.template.errors import EntityNotFound, Invalid, MalformedRequest
from services.api import policy
from services.api.context import context
from services.api.http import json_response, query_bool
from services.api.keys import REGISTRY
from services.api.type_templates import provider_template

SUPPORT_STATUSES = ("UNKNOWN", "SUPPORTED", "DEPRECATED", "UNSUPPORTED", "HIDDEN")


def _last(req: web.Request, name: str) -> str | None:
    # Heat reads query parameters through webob, where a repeated key's last value wins.
    values = req.query.getall(name, [])
    return values[-1] if values else None


def _matches(plugin: ResourceType, pattern: re.Pattern[str] | None, status: str | None,
             version: str | None) -> bool:
    support = plugin.support_status
    if support.status == "HIDDEN":
        return False
    if pattern is not None and not pattern.match(plugin.type_name):
        return False
    if version is not None and support.version != version:
        return False
    return status is None or support.status == status


async def list_types(req: web.Request) -> web.Response:
    with_description = query_bool(req, "with_description")
    status = _last(req, "support_status")
    if status is not None and status not in SUPPORT_STATUSES:
        raise Invalid(f"Invalid support status and should be one of {SUPPORT_STATUSES}")
    name = _last(req, "name")
    try:
        pattern = None if name is None else re.compile(name)
    except re.error:
        return json_response({"resource_types": []})
    registry = req.app[REGISTRY]
    admin = context(req).is_admin
    found = [plugin for plugin in map(registry.get, registry.types())
             if _matches(plugin, pattern, status, _last(req, "version"))
             and (admin or not policy.admin_only_type(plugin.type_name))]
    if with_description:
        return json_response({"resource_types": [
            {"resource_type": plugin.type_name, "description": plugin.description} for plugin in found]})
    return json_response({"resource_types": [plugin.type_name for plugin in found]})


def _plugin(req: web.Request) -> ResourceType:
    type_name = req.match_info["type_name"]
    refusal = policy.refusal_for_type(type_name)
    if refusal is not None and not context(req).is_admin:
        raise policy.Forbidden(refusal)
    registry = req.app[REGISTRY]
    if type_name not in registry:
        raise EntityNotFound("Resource Type", type_name)
    plugin = registry.get(type_name)
    if plugin.support_status.status == "HIDDEN":
        raise errors.NotSupported(type_name)
    return plugin


async def show_type(req: web.Request) -> web.Response:
    # Heat's router never hands the query to this action, so Heat always leaves the
    # description out; Ember honours with_description, which heatclient's --long sends.
    with_description = query_bool(req, "with_description")
    return json_response(_plugin(req).schema_api(with_description=with_description))


async def type_template(req: web.Request) -> web.Response:
    given = _last(req, "template_type")
    kind = "cfn" if given is None else given.lower()
    if kind not in ("hot", "cfn"):
        raise MalformedRequest(f'Template type is not supported: Invalid template type "{given}", '
                               "valid types are: cfn, hot.")
    return json_response(provider_template(_plugin(req), "hot" if kind == "hot" else "cfn"))
