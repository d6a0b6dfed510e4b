"""What a create or update body carries (Heat's ``InstantiationData``), checked field by field."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Mapping
from typing import Any

import orjson
from aiohttp import web

from libs import operations
from libs.evaluation_pool import Evaluator
from libs.template import budgets, errors, loader
from libs.template.errors import MalformedRequest
from libs.template.limits import Limits
from libs.template.request import StackRequest
from services.api.http import parse_bool, run_here
from services.api.keys import SETTINGS

MALFORMED = errors.MALFORMED
# The stacks table keeps timeout_mins in a PostgreSQL integer.
MAX_TIMEOUT_MINS = 2**31 - 1

TEMPLATE_KEYS = ("template", "template_url", "files", "environment", "environment_files", "parameters",
                 "files_container")


def limits_of(request: web.Request) -> Limits:
    api = request.app[SETTINGS].api
    return Limits(max_template_size=api.max_template_size, max_json_body_size=api.max_json_body_size,
                  max_resources_per_stack=api.max_resources_per_stack)


def stack_request(body: Mapping[str, Any], *, template_required: bool = True) -> StackRequest:
    template = body.get("template")
    if template is None and body.get("template_url"):
        # Ember fetches nothing from the network; clients send the template itself.
        raise MalformedRequest(f"Could not retrieve template: Failed to retrieve template: "
                               f"{body['template_url']}")
    if template is None and template_required:
        raise MalformedRequest("No template specified")
    files = body.get("files") or {}
    if not isinstance(files, dict):
        raise MalformedRequest("files: expected an object of file names to contents")
    parameters = body.get("parameters") or {}
    if not isinstance(parameters, dict):
        raise MalformedRequest("parameters: expected an object")
    env_files = body.get("environment_files")
    if env_files is not None and not isinstance(env_files, list):
        raise MalformedRequest("environment_files: expected a list of file names")
    if template is not None and not isinstance(template, (str, dict)):
        raise MalformedRequest(MALFORMED)
    environment = body.get("environment")
    if environment is not None and not isinstance(environment, (str, dict)):
        raise MalformedRequest(MALFORMED)
    if not all(isinstance(v, str) for v in files.values()) or not all(
            isinstance(n, str) for n in env_files or ()):
        raise MalformedRequest(MALFORMED)
    return StackRequest(template=template, files={str(k): v for k, v in files.items()},
                        environment=environment, environment_files=env_files,
                        parameters=parameters)


def parsed(stack_request: StackRequest, limits: Limits) -> tuple[StackRequest, Limits]:
    """The request with its template and environment texts parsed, as Heat's API parses them,
    and the limits for checking the top template.

    Heat measures a text template once, as text; the engine's check measures a
    map template's ``str()``, so it is lifted for a template already measured.
    """
    template = stack_request.template
    if isinstance(template, (str, bytes)):
        try:
            template = loader.parse_template(template, max_size=limits.max_template_size)
        except errors.TemplateParseError as exc:
            raise MalformedRequest(f"Template not in valid format: {exc}") from None
        limits = dataclasses.replace(limits, max_template_size=sys.maxsize)
    environment = stack_request.environment
    # With environment_files, Heat's API never reads the body's environment.
    if environment is not None and not stack_request.environment_files:
        try:
            environment = loader.parse_environment(environment)
        except errors.InvalidEnvironment as exc:
            raise MalformedRequest(f"Environment not in valid format: {exc}") from None
    return dataclasses.replace(stack_request, template=template, environment=environment), limits


def has_text(stack_request: StackRequest) -> bool:
    """Whether the template or environment came as text (YAML or JSON) rather than as the body's
    maps: once parsed, only a request of maps is sure to hold nothing but JSON values."""
    return isinstance(stack_request.template, (str, bytes)) or isinstance(stack_request.environment,
                                                                          (str, bytes))


async def parse(evaluation: Evaluator, stack_request: StackRequest, limits: Limits
                ) -> tuple[StackRequest, Limits]:
    """:func:`parsed`, in the pool when there is text to parse (YAML may take long; the pool has a
    deadline), else here: a template given as a map has nothing to parse, and sending it to a
    pool process and back costs seconds at 10^5 resources."""
    if has_text(stack_request):
        return await evaluation.run(parsed, stack_request, limits)
    return run_here(parsed, stack_request, limits)


def _tags(value: Any) -> list[str]:
    tags = [t.strip() for t in value.split(",")] if isinstance(value, str) else value
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise MalformedRequest("tags: expected a list of strings or a comma-separated string")
    for tag in tags:
        if len(tag) > 80:
            raise MalformedRequest(f"Tag {tag!r} is longer than 80 characters")
    return [t for t in tags if t]


def _timeout(value: Any) -> int | None:
    if value is None:
        return None
    try:
        minutes = int(value)
    except (TypeError, ValueError):
        raise MalformedRequest("Only integer is acceptable by 'timeout_mins'.") from None
    if minutes < 0:
        raise MalformedRequest("Value must be at least 0 for 'timeout_mins'.")
    if minutes > MAX_TIMEOUT_MINS:
        raise MalformedRequest(f"Value must be at most {MAX_TIMEOUT_MINS} for 'timeout_mins'.")
    return minutes or None


def options(body: Mapping[str, Any], *, base: operations.Options | None = None) -> operations.Options:
    """Stack options from the body; on update, what the body leaves out keeps ``base``'s value."""
    base = base or operations.Options()
    return operations.Options(
        disable_rollback=parse_bool("disable_rollback", body["disable_rollback"])
        if "disable_rollback" in body else base.disable_rollback,
        timeout_mins=_timeout(body["timeout_mins"]) if "timeout_mins" in body else base.timeout_mins,
        tags=_tags(body["tags"]) if body.get("tags") is not None else base.tags,
    )


def adopt_data(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """``adopt_stack_data``: Heat's abandon data, as a JSON string (or an object)."""
    given = body.get("adopt_stack_data")
    if given is None:
        return None
    if isinstance(given, str):
        try:
            given = orjson.loads(given)
        except orjson.JSONDecodeError as exc:
            raise MalformedRequest(f"Invalid adopt data: {exc}") from None
        budgets.check_depth(given, "adopt_stack_data")
    if not isinstance(given, dict) or not isinstance(given.get("resources", {}), dict):
        raise MalformedRequest("Invalid adopt data: expected an object with resources")
    return given


def stack_name(body: Mapping[str, Any]) -> str:
    name = body.get("stack_name")
    if not isinstance(name, str) or not name:
        raise MalformedRequest("No stack name specified")
    if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9_.-]{0,254}", name):
        raise MalformedRequest(f'Invalid stack name {name} must contain only alphanumeric or "_-." '
                               "characters, must start with alpha and must be 255 characters or less.")
    return name
