"""``POST /validate``: check a template as Heat's API and engine do, and describe its parameters.

The body is what heatclient's ``orchestration template validate`` sends
(``template`` or ``template_url``, ``files``, ``environment``,
``environment_files``, ``parameters``). Heat's API parses a template or
environment given as text itself, so their syntax errors carry its ``"Template
not in valid format: "`` prefix; everything else is the engine's validation
(:func:`libs.template.request.validate`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from libs.resources.registry import Registry
from libs.resources.validation import plugin_checks
from libs.template import request
from libs.template.errors import MalformedRequest
from libs.template.limits import Limits
from services.api import bodies
from services.api.bodies import limits_of
from services.api.context import context
from services.api.http import evaluation, json_body, json_response, query_bool
from services.api.keys import REGISTRY
from services.api.nested_parameters import NestedParameters

# Heat's ERROR_CODE_MAP: the only error code ignore_errors may name (a resource
# type whose cloud service is unavailable, which never happens to Ember's types).
IGNORABLE_ERROR_CODES = frozenset({"99001"})


def _check_ignorable(req: web.Request) -> None:
    values = req.query.getall("ignore_errors", [])
    if not values:
        return
    invalid = sorted(set(values[-1].split(",")) - IGNORABLE_ERROR_CODES)
    if invalid:
        raise MalformedRequest(f"Invalid codes in ignore_errors : {invalid}")


async def validate(req: web.Request) -> web.Response:
    body = await json_body(req)
    given = bodies.stack_request(body)
    _check_ignorable(req)
    result = await evaluation(req).run(_validated, given, limits_of(req), req.app[REGISTRY],
                                           project=context(req).project,
                                           show_nested=query_bool(req, "show_nested"))
    return json_response(result)


def _validated(given: request.StackRequest, limits: Limits, registry: Registry, *, project: str,
               show_nested: bool) -> dict[str, Any]:
    """The body of ``POST /validate`` (pure: it runs in the evaluation pool, under its deadline)."""
    stack_request, top_limits = bodies.parsed(given, limits)
    result: dict[str, Any] = request.validate(stack_request, project_id=project, limits=top_limits,
                                              builtin_types=registry.types(),
                                              checks=plugin_checks(registry, with_values=False))
    if show_nested:
        loaded = request.load(stack_request, stack_name="dummy", stack_id=None, project_id=project,
                              limits=top_limits, builtin_types=registry.types(), validate_values=False)
        nested = NestedParameters(registry, project_id=project, limits=limits).of(
            loaded, stack_request.files)
        if nested:
            # Heat's order: the top stack's sections, the nested ones, then the environment.
            environment = result.pop("Environment")
            result = {**result, "NestedParameters": nested, "Environment": environment}
    return result
