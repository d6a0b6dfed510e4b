"""The body of POST /validate: which keys appear when, and what they hold."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from libs.template.errors import UnhandledPythonError
from libs.template.parameters import Parameters, parse_cfn_parameters, parse_hot_parameters
from libs.template.validation_output import (
    describe_parameter,
    describe_parameters,
    nested_entry,
    template_description,
    validate_result,
)
from services.api.faults import status_of

EMPTY_ENV = {"event_sinks": [], "parameter_defaults": {}, "parameters": {},
             "resource_registry": {"resources": {}}}


def hot(text: str, user: dict[str, Any] | None = None, defaults: dict[str, Any] | None = None,
        version: str = "2021-04-16") -> Parameters:
    schemas = parse_hot_parameters(yaml.safe_load(text), version_date=version)
    # POST /validate builds a stack called "dummy" that is never stored
    params = Parameters(schemas, user_params=user, param_defaults=defaults, stack_name="dummy")
    params.validate(validate_value=False)
    return params


@pytest.mark.parametrize(
    ("text", "user", "defaults", "expected"),
    [
        ("p: {type: string}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p"}),
        ("p: {type: number}", None, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p"}),
        ("p: {type: json}", None, None, {"Type": "Json", "Description": "", "NoEcho": "false", "Label": "p"}),
        ("p: {type: comma_delimited_list}", None, None,
         {"Type": "CommaDelimitedList", "Description": "", "NoEcho": "false", "Label": "p"}),
        ("p: {type: boolean}", None, None,
         {"Type": "Boolean", "Description": "", "NoEcho": "false", "Label": "p"}),
        ("p: {type: string, label: Nova KeyPair Name, description: Name of a key pair}", None, None,
         {"Type": "String", "Description": "Name of a key pair", "NoEcho": "false",
          "Label": "Nova KeyPair Name"}),
        ("p: {type: string, label: '', description: null}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p"}),
        # a hidden default is shown in clear; only NoEcho tells
        ("p: {type: string, hidden: true, default: s3cr3t}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "true", "Label": "p", "Default": "s3cr3t"}),
        # defaults are shown raw (not converted to the type)
        ("p: {type: number, default: '42'}", None, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p", "Default": "42"}),
        ("p: {type: comma_delimited_list, default: [a, b]}", None, None,
         {"Type": "CommaDelimitedList", "Description": "", "NoEcho": "false", "Label": "p",
          "Default": ["a", "b"]}),
        # request/environment values appear as Value, parameter_defaults as Default
        ("p: {type: string, default: defaultnet}", {"p": "betternetname"}, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Default": "defaultnet",
          "Value": "betternetname"}),
        ("p: {type: string}", {"p": "betternetname"}, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Value": "betternetname"}),
        ("p: {type: string, default: tmpl}", None, {"p": "env"},
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Default": "env"}),
        ("p: {type: string}", None, {"p": "env"},
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Default": "env"}),
        # Heat only echoes truthy values
        ("p: {type: string, default: d}", {"p": ""}, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Default": "d"}),
        ("p: {type: number, default: 1}", {"p": 0}, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p", "Default": 1}),
        # hidden request values are echoed as they are, too
        ("p: {type: string, hidden: true}", {"p": "pw"}, None,
         {"Type": "String", "Description": "", "NoEcho": "true", "Label": "p", "Value": "pw"}),
        ("p: {type: string, tags: [feature1, feature2]}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p",
          "Tags": ["feature1", "feature2"]}),
        ("p: {type: string, tags: []}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p"}),
        # constraints
        ("p: {type: number, constraints: [{allowed_values: [1, 4, 8]}]}", None, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p", "AllowedValues": [1, 4, 8]}),
        ("p: {type: number, constraints: [{range: {min: 1, max: 10}}, {modulo: {step: 2, offset: 1}}]}",
         None, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p", "MinValue": 1, "MaxValue": 10,
          "Step": 2, "Offset": 1}),
        ("p: {type: number, constraints: [{range: {max: '2.5'}}]}", None, None,
         {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "p", "MaxValue": 2.5}),
        ("p: {type: string, constraints: [{length: {min: 1}, description: not empty}, "
         "{allowed_pattern: '[a-z]+', description: lowercase}, {custom_constraint: nova.keypair}]}",
         None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "MinLength": 1,
          "AllowedPattern": "[a-z]+", "CustomConstraint": "nova.keypair",
          "ConstraintDescription": "not empty lowercase"}),
        ("p: {type: string, constraints: [{length: {max: 8}}, {length: {min: 2}}]}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "MinLength": 2,
          "MaxLength": 8}),
        ("p: {type: string, constraints: [{allowed_values: [a]}, {allowed_values: [b], description: ''}]}",
         None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "AllowedValues": ["b"]}),
        # an unknown custom constraint is fine for POST /validate
        ("p: {type: string, default: x, constraints: [{custom_constraint: no.such}]}", None, None,
         {"Type": "String", "Description": "", "NoEcho": "false", "Label": "p", "Default": "x",
          "CustomConstraint": "no.such"}),
    ],
)
def test_describe_hot_parameter(text: str, user: dict[str, Any] | None, defaults: dict[str, Any] | None,
                                expected: dict[str, Any]) -> None:
    assert describe_parameter(hot(text, user, defaults), "p") == expected


def test_describe_cfn_parameter_repeats_the_shared_description() -> None:
    schemas = parse_cfn_parameters(yaml.safe_load("""
        Size:
          Type: Number
          Description: size
          MinValue: "1"
          MaxValue: 8
          AllowedValues: [1, 4, 8]
          ConstraintDescription: must be small
          NoEcho: true
          Default: 4
        """))
    params = Parameters(schemas, dialect="cfn", stack_name="dummy")
    assert describe_parameters(params) == {"Size": {
        "Type": "Number", "Description": "size", "NoEcho": "true", "Label": "Size", "Default": 4,
        "MinValue": 1, "MaxValue": 8, "AllowedValues": [1, 4, 8],
        "ConstraintDescription": "must be small must be small"}}


def test_non_string_constraint_descriptions_break_heat() -> None:
    params = hot("p: {type: string, constraints: [{length: {min: 1}, description: 5}]}")
    with pytest.raises(UnhandledPythonError) as err:
        describe_parameter(params, "p")
    assert (err.value.error_type, status_of(err.value)) == ("TypeError", 400)
    assert str(err.value) == "sequence item 0: expected str instance, int found"


def test_pseudo_parameters_are_left_out_by_name() -> None:
    params = hot("{a: {type: string}, 'OS::region': {type: string}, 'OS::stack_name': {type: string}}")
    assert list(describe_parameters(params)) == ["a"]
    cfn = Parameters(parse_cfn_parameters({"B": {"Type": "String"}}), dialect="cfn", stack_name="dummy")
    assert list(describe_parameters(cfn)) == ["B"]


@pytest.mark.parametrize(("raw", "expected"), [
    (None, "No description"), ("", "No description"), ("test.", "test."), ({"a": 1}, {"a": 1})])
def test_template_description(raw: Any, expected: Any) -> None:
    assert template_description(raw) == expected


def test_whole_answer() -> None:
    params = hot("{KeyName: {type: string, description: a key}, size: {type: number, default: 4}}",
                 user={"KeyName": "k"})
    env = {**EMPTY_ENV, "parameters": {"KeyName": "k"}}
    groups = [{"label": "RootTest", "parameters": ["KeyName"]}]
    assert validate_result(description="test.", parameters=params, environment=env,
                           parameter_groups=groups) == {
        "Description": "test.",
        "Parameters": {
            "KeyName": {"Type": "String", "Description": "a key", "NoEcho": "false", "Label": "KeyName",
                        "Value": "k"},
            "size": {"Type": "Number", "Description": "", "NoEcho": "false", "Label": "size", "Default": 4}},
        "ParameterGroups": [{"label": "RootTest", "parameters": ["KeyName"]}],
        "Environment": {"event_sinks": [], "parameter_defaults": {}, "parameters": {"KeyName": "k"},
                        "resource_registry": {"resources": {}}},
    }


@pytest.mark.parametrize("groups", [None, []])
def test_no_groups_no_key(groups: Any) -> None:
    result = validate_result(description=None, parameters=hot("{}"), environment=EMPTY_ENV,
                             parameter_groups=groups)
    assert result == {"Description": "No description", "Parameters": {}, "Environment": EMPTY_ENV}


def test_nested_parameters() -> None:
    inner = hot("test_param: {type: string}")
    group_member = nested_entry(resource_type="OS::Test::TestResource", description=None, parameters=inner)
    group = nested_entry(resource_type="OS::Heat::ResourceGroup", description=None, parameters=hot("{}"),
                         nested={"0": group_member})
    nested = nested_entry(resource_type="OS::Test::TestResource", description="", parameters=inner,
                          parameter_groups=[{"label": "Test", "parameters": ["test_param"]}])
    result = validate_result(description=None, parameters=hot("test_root_param: {type: string}"),
                             environment=EMPTY_ENV, nested={"Nested": nested, "Group": group})
    param = {"Description": "", "Label": "test_param", "NoEcho": "false", "Type": "String"}
    assert result["NestedParameters"] == {
        "Nested": {"Description": "No description",
                   "ParameterGroups": [{"label": "Test", "parameters": ["test_param"]}],
                   "Parameters": {"test_param": param}, "Type": "OS::Test::TestResource"},
        "Group": {"Description": "No description", "Parameters": {}, "Type": "OS::Heat::ResourceGroup",
                  "NestedParameters": {"0": {"Description": "No description",
                                             "Parameters": {"test_param": param},
                                             "Type": "OS::Test::TestResource"}}},
    }
    assert "NestedParameters" not in validate_result(description=None, parameters=inner,
                                                     environment=EMPTY_ENV, nested={})
