"""From what an API request carries to a validated stack definition, as Heat's engine does it.

A create, a preview and ``POST /validate`` all start here: the template text
or map, the ``files`` map, the environment and ``environment_files``, and the
parameters. :func:`load` returns every piece (template, environment,
parameters, definition) so the caller keeps what it stores.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from libs.template import errors, loader
from libs.template.constraints import CustomConstraints
from libs.template.environment import Environment, merge_environments
from libs.template.limits import Limits
from libs.template.parameter_groups import validate_parameter_groups
from libs.template.parameters import Parameters, parse_cfn_parameters, parse_hot_parameters
from libs.template.stack import ResourceChecks, StackDefinition
from libs.template.template import Template
from libs.template.validation_output import validate_result


@dataclasses.dataclass(frozen=True)
class StackRequest:
    template: Any
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)
    environment: Any = None
    environment_files: Sequence[str] | None = None
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class LoadedStack:
    template: Template
    environment: Environment
    parameters: Parameters
    definition: StackDefinition


DEFAULT_LIMITS = Limits()

# The resource plugins' checks for a stack with this environment
# (``libs.resources.validation.plugin_checks``).
ChecksFor = Callable[[Environment], ResourceChecks]


class ValidateFailed(errors.TemplateError):
    """Heat's ``POST /validate`` turns most failures into a plain 400 with the message."""

    error_type = "HTTPBadRequest"


def parameter_schemas(template: Template) -> dict[str, Any]:
    section = template.section(template.dialect.parameters)
    if template.version.kind == "hot":
        return parse_hot_parameters(section, version_date=template.version.date)
    return parse_cfn_parameters(section)


def environment_for(request: StackRequest, template: Template, *,
                    builtin_types: Collection[str] = ()) -> Environment:
    """The request's environment with ``environment_files`` merged in, Heat's order.

    With ``environment_files``, the files' merge replaces the request's
    ``environment`` and only the request's ``parameters`` are the base.
    """
    schemas = parameter_schemas(template)
    if request.environment_files:
        base = loader.with_missing_sections({"parameters": dict(request.parameters)})
        merged = merge_environments(request.environment_files, request.files, base,
                                    {n: s.type for n, s in schemas.items()})
    else:
        merged = loader.with_missing_sections(loader.parse_environment(request.environment))
        _check_parameter_sections(merged)
        merged["parameters"] = {**merged.get("parameters", {}), **request.parameters}
    _check_parameter_sections(merged)
    return Environment.from_dict(merged, builtin_types=builtin_types)


def _check_parameter_sections(environment: Mapping[str, Any]) -> None:
    """Heat reads these sections' items and fails with Python's AttributeError (a 400) on others."""
    for section in ("parameters", "parameter_defaults"):
        value = environment.get(section)
        if value is not None and not isinstance(value, Mapping):
            raise errors.UnhandledPythonError(
                "AttributeError", f"'{type(value).__name__}' object has no attribute 'items'")


def load(request: StackRequest, *, stack_name: str | None, stack_id: str | None, project_id: str,
         limits: Limits = DEFAULT_LIMITS, builtin_types: Collection[str] | None = None,
         validate_values: bool = True, facade: Mapping[str, Any] | None = None,
         checks: ChecksFor | None = None, updating: bool = False,
         custom_constraints: CustomConstraints | None = None) -> LoadedStack:
    """Parse, merge and validate everything a stack operation needs (raises TemplateError).

    With ``checks``, the resources are validated as Heat's engine does before it
    stores anything (properties, attributes read). ``updating``: the template of
    an update, whose structure errors keep their own type (a new stack's are
    ``StackValidationFailed``, as Heat checks a new template first and wraps them).
    ``custom_constraints``: what parameters' ``custom_constraint`` names mean (the
    checks take their own for properties).
    """
    template = Template.load(request.template, request.files, max_size=limits.max_template_size)
    environment = environment_for(request, template, builtin_types=builtin_types or ())
    try:
        template.validate_structure()
    except errors.InvalidTemplateSection as exc:
        if updating:
            raise
        raise errors.StackValidationFailed(str(exc)) from None
    limits.check_resource_count(len(template.resources_section))
    parameters = Parameters(parameter_schemas(template), dialect=template.version.kind,
                            user_params=environment.parameters,
                            param_defaults=environment.parameter_defaults,
                            stack_name=stack_name, stack_id=stack_id, project_id=project_id)
    parameters.validate(validate_value=validate_values, custom_constraints=custom_constraints)
    if template.dialect.parameter_groups:
        validate_parameter_groups(template.raw.get(template.dialect.parameter_groups),
                                  parameters.template_names())
    definition = StackDefinition(template, parameters, facade,
                                 checks(environment) if checks is not None else None)
    # Heat makes the stack's resources (finding each type) before it validates them.
    if builtin_types is not None:
        for name, defn in definition.resources.items():
            environment.registry.check_type(name, defn.type)
    definition.validate()
    return LoadedStack(template, environment, parameters, definition)


def validate(request: StackRequest, *, project_id: str, limits: Limits = DEFAULT_LIMITS,
             builtin_types: Collection[str] | None = None, checks: ChecksFor | None = None
             ) -> dict[str, Any]:
    """The body of Heat's ``POST /validate``.

    Parameter values and resource property values are not checked (Heat does
    neither here); ``checks`` (names only) see to property names and the
    attributes outputs read. Failures Heat reports as ``{"Error": ...}`` become
    :class:`ValidateFailed` (HTTPBadRequest); version, schema and parameter
    name errors keep their own types, as in Heat.
    """
    template = Template.load(request.template, request.files, max_size=limits.max_template_size)
    environment = environment_for(request, template, builtin_types=builtin_types or ())
    try:
        template.validate_structure()
        limits.check_resource_count(len(template.resources_section))
    except errors.TemplateError as exc:
        raise ValidateFailed(str(exc)) from None
    parameters = Parameters(parameter_schemas(template), dialect=template.version.kind,
                            user_params=environment.parameters,
                            param_defaults=environment.parameter_defaults,
                            stack_name="dummy", stack_id=None, project_id=project_id)
    try:
        parameters.validate(validate_value=False)
        group_key = template.dialect.parameter_groups
        groups = template.raw.get(group_key) if group_key else None
        if groups is not None:
            validate_parameter_groups(groups, parameters.template_names())
        definition = StackDefinition(template, parameters, None,
                                     checks(environment) if checks is not None else None)
        definition.validate()
    except errors.StackValidationFailed as exc:
        raise ValidateFailed(str(exc)) from None
    if builtin_types is not None:
        for name, defn in definition.resources.items():
            environment.registry.check_type(name, defn.type)
    user_env = environment.user_dict()
    user_env.pop("parameter_merge_strategies", None)
    return validate_result(description=template.raw.get(template.dialect.description, ""),
                           parameters=parameters, environment=user_env, parameter_groups=groups)
