"""The intrinsic functions of CloudFormation-format templates, as Heat's tables define them.

``AWSTemplateFormatVersion: 2010-09-09`` has ``Fn::If`` and a ``Conditions``
section; ``HeatTemplateFormatVersion: 2012-12-12`` has neither. HOT
2013-05-23 accepts most CFN functions, and HOT 2014-10-16/2015-04-30 still
accept ``Fn::Select``. The functions themselves live in :mod:`cfn_refs`,
:mod:`cfn_values` and :mod:`cfn_conditions`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from libs.template.functions.base import Function, Invalid, condition_holds
from libs.template.functions.cfn_conditions import And, Equals, If, Not, Or
from libs.template.functions.cfn_refs import (
    FindInMap,
    GetAtt,
    GetAZs,
    ParamRef,
    Ref,
    ResourceFacade,
    ResourceRef,
)
from libs.template.functions.cfn_values import Base64, Join, MemberListToMap, Replace, Select, Split

FunctionTable = Mapping[str, type[Function]]

CFN_SELECT: type[Function] = Select

HEAT_CFN_FUNCTIONS: FunctionTable = MappingProxyType({
    "Fn::FindInMap": FindInMap,
    "Fn::GetAZs": GetAZs,
    "Ref": Ref,
    "Fn::GetAtt": GetAtt,
    "Fn::Select": Select,
    "Fn::Join": Join,
    "Fn::Split": Split,
    "Fn::Replace": Replace,
    "Fn::Base64": Base64,
    "Fn::MemberListToMap": MemberListToMap,
    "Fn::ResourceFacade": ResourceFacade,
})

CFN_FUNCTIONS: FunctionTable = MappingProxyType({**HEAT_CFN_FUNCTIONS, "Fn::If": If})

# In conditions every function of the version is invalid unless it is a
# condition function; there ``Ref`` always names a parameter, and
# ``Fn::FindInMap`` stays usable (Heat lists it among them).
CFN_CONDITION_FUNCTIONS: FunctionTable = MappingProxyType({
    **{name: Invalid for name in CFN_FUNCTIONS},
    "Fn::Equals": Equals,
    "Ref": ParamRef,
    "Fn::FindInMap": FindInMap,
    "Fn::Not": Not,
    "Fn::And": And,
    "Fn::Or": Or,
})

# 2012-12-12 has no conditions; the table exists for ParseContext's sake.
HEAT_CFN_CONDITION_FUNCTIONS: FunctionTable = MappingProxyType(
    {name: Invalid for name in HEAT_CFN_FUNCTIONS})

HOT_20130523_CFN_FUNCTIONS: FunctionTable = MappingProxyType({
    name: CFN_FUNCTIONS[name]
    for name in ("Fn::GetAZs", "Ref", "Fn::Select", "Fn::Join", "Fn::Split", "Fn::Replace",
                 "Fn::Base64", "Fn::MemberListToMap", "Fn::ResourceFacade")
})

__all__ = [
    "CFN_CONDITION_FUNCTIONS",
    "CFN_FUNCTIONS",
    "CFN_SELECT",
    "HEAT_CFN_CONDITION_FUNCTIONS",
    "HEAT_CFN_FUNCTIONS",
    "HOT_20130523_CFN_FUNCTIONS",
    "And",
    "Base64",
    "Equals",
    "FindInMap",
    "FunctionTable",
    "GetAZs",
    "GetAtt",
    "If",
    "Join",
    "MemberListToMap",
    "Not",
    "Or",
    "ParamRef",
    "Ref",
    "Replace",
    "ResourceFacade",
    "ResourceRef",
    "Select",
    "Split",
    "condition_holds",
]
