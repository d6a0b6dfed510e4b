"""``GET /resource_types/{type}/template``: the provider template Heat generates for one type.

The document is a template that stands in for the type: every visible property
is a parameter passed straight to the one resource, and every attribute (with
``show``, and Heat's extra ``OS::stack_id``) is an output. Users start their
provider templates from it, so its shape follows Heat's ``resource_to_template``
key for key; only the descriptions are Ember's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from libs.resources.attributes import BASE_ATTRIBUTES, AttrSchema
from libs.resources.base import ResourceType
from libs.resources.properties import PropSchema
from libs.template.constraints import AllowedPattern, AllowedValues, Length, Range

TemplateType = Literal["hot", "cfn"]

# Heat names the template's one resource after its plugin class; where Ember's
# class is called otherwise, Heat's name keeps the generated documents identical.
HEAT_CLASS_NAMES: Mapping[str, str] = {
    "OS::Heat::Stack": "RemoteStack",
    "OS::Heat::WaitCondition": "HeatWaitCondition",
    "OS::Heat::WaitConditionHandle": "HeatWaitConditionHandle",
    "OS::Heat::AutoScalingGroup": "AutoScalingResourceGroup",
    "OS::Heat::ScalingPolicy": "AutoScalingPolicy",
}

# Heat has no parameter type for an "any" property and fails with a 500 on such a type;
# Ember offers json, the parameter type that takes any structure.
_HOT_TYPES = {"integer": "number", "number": "number", "string": "string", "boolean": "boolean",
              "map": "json", "list": "comma_delimited_list", "any": "json"}
_CFN_TYPES = {"integer": "Number", "number": "Number", "string": "String", "boolean": "Boolean",
              "map": "Json", "list": "CommaDelimitedList", "any": "Json"}
# CFN parameters read booleans as strings; Heat's generator lists the spellings (HOT's does not).
_CFN_BOOLEANS = ["True", "true", "False", "false"]


def resource_name(plugin: ResourceType) -> str:
    return HEAT_CLASS_NAMES.get(plugin.type_name, type(plugin).__name__)


def _bounds(constraint: Range | Length, low: str, high: str) -> dict[str, Any]:
    return {key: value for key, value in ((low, constraint.min), (high, constraint.max))
            if value is not None}


def _hot_constraint(constraint: object) -> dict[str, Any]:
    # Kinds a parameter cannot express (modulo, custom constraints) become an
    # empty entry, as Heat's generator leaves them.
    if isinstance(constraint, Length):
        return {"length": _bounds(constraint, "min", "max")}
    if isinstance(constraint, Range):
        return {"range": _bounds(constraint, "min", "max")}
    if isinstance(constraint, AllowedValues):
        return {"allowed_values": list(constraint.allowed)}
    if isinstance(constraint, AllowedPattern):
        return {"allowed_pattern": constraint.pattern}
    return {}


def _hot_parameter(prop: PropSchema) -> dict[str, Any]:
    param: dict[str, Any] = {"type": _HOT_TYPES[prop.type]}
    if prop.description is not None:
        param["description"] = prop.description
    if prop.default is not None:
        param["default"] = prop.default
    if prop.constraints:
        param["constraints"] = [_hot_constraint(c) for c in prop.constraints]
    return param


def _cfn_parameter(prop: PropSchema) -> dict[str, Any]:
    param: dict[str, Any] = {"Type": _CFN_TYPES[prop.type]}
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
        param["AllowedValues"] = list(_CFN_BOOLEANS)
    return param


def _cfn_property(name: str, prop: PropSchema) -> dict[str, Any]:
    # A CommaDelimitedList parameter is text; the list property gets it split back.
    if prop.type == "list":
        return {"Fn::Split": [",", {"Ref": name}]}
    return {"Ref": name}


def _outputs(name: str, attributes: Mapping[str, AttrSchema], hot: bool) -> dict[str, Any]:
    outputs: dict[str, Any]
    if hot:
        outputs = {key: {"value": {"get_attr": [name, key]}, "description": attr.description}
                   for key, attr in attributes.items()}
        outputs["OS::stack_id"] = {"value": {"get_resource": name}}
    else:
        outputs = {key: {"Value": {"Fn::GetAtt": [name, key]}, "Description": attr.description}
                   for key, attr in attributes.items()}
        outputs["OS::stack_id"] = {"Value": {"Ref": name}}
    return outputs


def provider_template(plugin: ResourceType, template_type: TemplateType = "cfn") -> dict[str, Any]:
    """The template Heat's ``GET /resource_types/{type}/template`` answers for this type."""
    name = resource_name(plugin)
    hot = template_type == "hot"
    visible = {key: prop for key, prop in plugin.properties_schema.items() if prop.support_status != "HIDDEN"}
    attributes = {key: attr for key, attr in plugin.attributes_schema.items()
                  if attr.support_status != "HIDDEN"}
    attributes.update(BASE_ATTRIBUTES)
    description = f"Initial template of {name}"
    if hot:
        return {
            "heat_template_version": "2016-10-14",
            "description": description,
            "parameters": {key: _hot_parameter(prop) for key, prop in visible.items()},
            "outputs": _outputs(name, attributes, hot=True),
            "resources": {name: {"type": plugin.type_name,
                                 "properties": {key: {"get_param": key} for key in visible}}},
        }
    return {
        "HeatTemplateFormatVersion": "2012-12-12",
        "Description": description,
        "Parameters": {key: _cfn_parameter(prop) for key, prop in visible.items()},
        "Resources": {name: {"Type": plugin.type_name,
                             "Properties": {key: _cfn_property(key, prop) for key, prop in visible.items()}}},
        "Outputs": _outputs(name, attributes, hot=False),
    }
