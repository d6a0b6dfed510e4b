"""The body of Heat's ``POST /validate`` answer, built from already-validated pieces.

Heat shows what the template declares, not whether values fit: a hidden
parameter's default appears in clear (only ``NoEcho`` says "true"), request
values appear as ``Value`` (when truthy), and ``Default`` is the
``parameter_defaults`` value when the environment has one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libs.template.constraints import (
    AllowedPattern,
    AllowedValues,
    CustomConstraint,
    Length,
    Modulo,
    Range,
)
from libs.template.errors import UnhandledPythonError
from libs.template.parameters import CFN_TYPE_NAMES, Parameters

NO_DESCRIPTION = "No description"


def template_description(raw: Any) -> Any:
    """A missing or empty description reads "No description" (HOT and CFN alike)."""
    return raw or NO_DESCRIPTION


def _constraint_keys(constraints: tuple[Any, ...]) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    descriptions: list[Any] = []
    for c in constraints:
        if isinstance(c, Length):
            shown.update({k: v for k, v in (("MinLength", c.min), ("MaxLength", c.max)) if v is not None})
        elif isinstance(c, Range):
            shown.update({k: v for k, v in (("MinValue", c.min), ("MaxValue", c.max)) if v is not None})
        elif isinstance(c, Modulo):
            shown.update({"Step": c.step, "Offset": c.offset})
        elif isinstance(c, AllowedValues):
            shown["AllowedValues"] = list(c.allowed)
        elif isinstance(c, AllowedPattern):
            shown["AllowedPattern"] = c.pattern
        elif isinstance(c, CustomConstraint):
            shown["CustomConstraint"] = c.name
        if c.description:
            descriptions.append(c.description)
    if descriptions:
        # Every description, space-joined: a CFN ConstraintDescription shared by
        # MinValue and AllowedValues shows twice.
        for index, text in enumerate(descriptions):
            if not isinstance(text, str):  # Heat's " ".join() fails on these: HTTP 500
                raise UnhandledPythonError(
                    "TypeError",
                    f"sequence item {index}: expected str instance, {type(text).__name__} found")
        shown["ConstraintDescription"] = " ".join(descriptions)
    return shown


def describe_parameter(parameters: Parameters, name: str) -> dict[str, Any]:
    """One entry of ``Parameters`` (Heat's format_validate_parameter)."""
    schema = parameters.schema(name)
    entry: dict[str, Any] = {
        "Type": CFN_TYPE_NAMES[schema.type],
        "Description": schema.description or "",
        "NoEcho": "true" if schema.hidden else "false",
        "Label": schema.label or name,
    }
    if parameters.has_default(name):
        entry["Default"] = parameters.default(name)
    user_value = parameters.user_value(name)
    if user_value:  # Heat tests truthiness: "", 0 and false are not echoed
        entry["Value"] = user_value
    if schema.tags:
        entry["Tags"] = schema.tags
    entry.update(_constraint_keys(schema.constraints))
    return entry


def describe_parameters(parameters: Parameters) -> dict[str, dict[str, Any]]:
    """Every parameter but the pseudo ones (by name: a template parameter called
    ``OS::region`` is left out too, as in Heat)."""
    return {name: describe_parameter(parameters, name)
            for name in parameters.names() if name not in parameters.pseudo_names}


def nested_entry(*, resource_type: str, description: Any, parameters: Parameters,
                 parameter_groups: Any = None,
                 nested: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One resource's entry under ``NestedParameters`` (``show_nested=true``)."""
    entry: dict[str, Any] = {
        "Type": resource_type,
        "Description": template_description(description),
        "Parameters": describe_parameters(parameters),
    }
    if parameter_groups:
        entry["ParameterGroups"] = parameter_groups
    if nested:
        entry["NestedParameters"] = dict(nested)
    return entry


def validate_result(*, description: Any, parameters: Parameters, environment: Mapping[str, Any],
                    parameter_groups: Any = None,
                    nested: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The whole answer.

    ``description`` and ``parameter_groups`` are the template's raw sections
    (groups are shown as written; CFN has none). ``environment`` is the user
    environment as Heat echoes it: ``parameters`` (request values merged in),
    ``parameter_defaults``, ``resource_registry`` and ``event_sinks``.
    ``nested`` maps resource names to :func:`nested_entry` results.
    """
    result: dict[str, Any] = {
        "Description": template_description(description),
        "Parameters": describe_parameters(parameters),
    }
    if parameter_groups:
        result["ParameterGroups"] = parameter_groups
    if nested:
        result["NestedParameters"] = dict(nested)
    result["Environment"] = dict(environment)
    return result
