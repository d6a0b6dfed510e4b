"""``GET /resource_types/{type}/template``: a template that wraps one resource type, as Heat makes it.

Every visible property becomes a parameter (its type, description, default and
constraints carried over) passed straight to the one resource, and every
attribute, ``show`` included, becomes an output. Heat names the resource after
its plugin class; Ember keeps those names so the documents are the same.
"""

from __future__ import annotations

from typing import Any, Literal

from libs.resources.attributes import BASE_ATTRIBUTES
from libs.resources.base import ResourceType
from libs.resources.properties import PropSchema
from libs.template.constraints import AllowedPattern, AllowedValues, Length, Range

TemplateType = Literal["hot", "cfn"]
_HOT_TYPES = {"integer": "number", "number": "number", "string": "string", "boolean": "boolean",
              "map": "json", "list": "comma_delimited_list"}
_CFN_TYPES = {"integer": "Number", "number": "Number", "string": "String", "boolean": "Boolean",
              "map": "Json", "list": "CommaDelimitedList"}
_BOOLEAN_VALUES = ["True", "true", "False", "false"]


def _bounds(constraint: Range | Length, low: str, high: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if constraint.min is not None:
        out[low] = constraint.min
    if constraint.max is not None:
        out[high] = constraint.max
    return out


def _hot_parameter(prop: PropSchema) -> dict[str, Any]:
    param: dict[str, Any] = {"type": _HOT_TYPES.get(prop.type, "string")}
    if prop.description is not None:
        param["description"] = prop.description
    if prop.default is not None:
        param["default"] = prop.default
    # As in Heat, each constraint replaces the list: the last one given is what is kept.
    for constraint in prop.constraints:
        if isinstance(constraint, Length):
            param["constraints"] = [{"length": _bounds(constraint, "min", "max")}]
        elif isinstance(constraint, Range):
            param["constraints"] = [{"range": _bounds(constraint, "min", "max")}]
        elif isinstance(constraint, AllowedValues):
            param["constraints"] = [{"allowed_values": list(constraint.allowed)}]
        elif isinstance(constraint, AllowedPattern):
            param["constraints"] = [{"allowed_pattern": constraint.pattern}]
    if prop.type == "boolean":
        param["constraints"] = [{"allowed_values": list(_BOOLEAN_VALUES)}]
    return param


def _cfn_parameter(prop: PropSchema) -> dict[str, Any]:
    param: dict[str, Any] = {"Type": _CFN_TYPES.get(prop.type, "String")}
    if prop.description is not None:
        param["Description"] = prop.description
    if prop.default is not None:
        param["Default"] = prop.default
    for constraint in prop.constraints:
        if isinstance(constraint, Length):
            param.update(_bounds(constraint, "MinLength", "MaxLength"))
        elif isinstance(constraint, Range):
            param.update(_bounds(constraint, "MinValue", "MaxValue"))
        elif isinstance(constraint, AllowedValues):
            param["AllowedValues"] = list(constraint.allowed)
        elif isinstance(constraint, AllowedPattern):
            param["AllowedPattern"] = constraint.pattern
    if prop.type == "boolean":
        param["AllowedValues"] = list(_BOOLEAN_VALUES)
    return param


def provider_template(plugin: ResourceType, template_type: TemplateType = "cfn") -> dict[str, Any]:
    name = type(plugin).__name__
    hot = template_type == "hot"
    visible = {k: p for k, p in plugin.properties_schema.items() if p.support_status != "HIDDEN"}
    params = {k: (_hot_parameter(p) if hot else _cfn_parameter(p)) for k, p in visible.items()}
    props = {k: ({"get_param": k} if hot else {"Ref": k}) for k in visible}
    attributes = {k: a for k, a in plugin.attributes_schema.items() if a.support_status != "HIDDEN"}
    attributes.update(BASE_ATTRIBUTES)
    description = f"Initial template of {name}"
    if hot:
        return {
            "heat_template_version": "2016-10-14",
            "description": description,
            "parameters": params,
            "outputs": {k: {"value": {"get_attr": [name, k]}, "description": a.description}
                        for k, a in attributes.items()},
            "resources": {name: {"type": plugin.type_name, "properties": props}},
        }
    return {
        "HeatTemplateFormatVersion": "2012-12-12",
        "Description": description,
        "Parameters": params,
        "Resources": {name: {"Type": plugin.type_name, "Properties": props}},
        "Outputs": {k: {"Value": {"Fn::GetAtt": [name, k]}, "Description": a.description}
                    for k, a in attributes.items()},
    }
