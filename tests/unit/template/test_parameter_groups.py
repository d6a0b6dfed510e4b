"""parameter_groups: Heat's checks, order and messages."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from libs.template.errors import StackValidationFailed, TemplateError, UnhandledPythonError
from libs.template.parameter_groups import group_parameter_names, validate_parameter_groups
from libs.template.parameters import parse_hot_parameters
from services.api.faults import status_of

SCHEMAS = parse_hot_parameters(
    yaml.safe_load("{KeyName: {type: string}, ImageId: {type: string}, InstanceType: {type: string}, "
                   "db_password: {type: string, hidden: true}, '5': {type: number}}"),
    version_date="2013-05-23")
NAMES = group_parameter_names(SCHEMAS)


def test_group_names_include_stackless_pseudo_parameters() -> None:
    assert NAMES == ["OS::stack_id", "OS::project_id", "KeyName", "ImageId", "InstanceType", "db_password",
                     "5"]


@pytest.mark.parametrize(
    "groups",
    [
        None,
        [],
        {},
        "",
        [{"label": "Server Group", "description": "d", "parameters": ["KeyName", "ImageId"]},
         {"label": "Database Group", "parameters": ["db_password"]}],
        [{"parameters": []}],
        [{"parameters": ["InstanceType"]}, {"parameters": ["KeyName"]}],
        # extra keys are not checked
        [{"label": "x", "parameters": ["KeyName"], "whatever": 1}],
        # Heat builds the names without a stack: OS::stack_id and OS::project_id are valid
        [{"label": "pseudo", "parameters": ["OS::stack_id", "OS::project_id"]}],
    ],
)
def test_valid_groups(groups: Any) -> None:
    validate_parameter_groups(groups, NAMES)


PREFIX = "Parameter Groups error: "


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("{label: x, parameters: [KeyName]}", StackValidationFailed,
         PREFIX + "parameter_groups: The parameter_groups should be a list."),
        ("a string", StackValidationFailed,
         PREFIX + "parameter_groups: The parameter_groups should be a list."),
        ("[{label: Server Group, description: d}]", StackValidationFailed,
         PREFIX + "parameter_groups.Server Group: The parameters must be provided for each parameter group."),
        ("[{label: Server Group, parameters: null}]", StackValidationFailed,
         PREFIX + "parameter_groups.Server Group: The parameters must be provided for each parameter group."),
        ("[{description: d}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The parameters must be provided for each parameter group."),
        ("[{label: Server Group, parameters: KeyName}]", StackValidationFailed,
         PREFIX + "parameter_groups.Server Group: The parameters of parameter group should be a list."),
        ("[{parameters: {KeyName: 1}}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The parameters of parameter group should be a list."),
        ("[{label: Server Group, parameters: [KeyName, InstanceType]}, "
         "{label: Database Group, parameters: [InstanceType, db_password]}]", StackValidationFailed,
         PREFIX + "parameter_groups.Database Group: The InstanceType parameter must be assigned to one "
         "parameter group only."),
        ("[{parameters: [KeyName, KeyName]}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The KeyName parameter must be assigned to one parameter group only."),
        ("[{label: Database Group, parameters: [KeyName, SomethingNotHere]}]", StackValidationFailed,
         PREFIX + "parameter_groups.Database Group: The grouped parameter SomethingNotHere does not "
         "reference a valid parameter."),
        ("[{parameters: [key_name]}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The grouped parameter key_name does not reference a valid parameter."),
        ("[{parameters: ['OS::stack_name']}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The grouped parameter OS::stack_name does not reference a valid "
         "parameter."),
        # a number does not name the parameter called "5"
        ("[{parameters: [5]}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The grouped parameter 5 does not reference a valid parameter."),
        ("[{parameters: [{a: 1}]}]", StackValidationFailed,
         PREFIX + "parameter_groups.: The grouped parameter {'a': 1} does not reference a valid parameter."),
        # numeric labels render as indexes, like any path item
        ("[{label: 7, parameters: [nope]}]", StackValidationFailed,
         PREFIX + "parameter_groups[7]: The grouped parameter nope does not reference a valid parameter."),
        ("[{label: '12', parameters: [nope]}]", StackValidationFailed,
         PREFIX + "parameter_groups[12]: The grouped parameter nope does not reference a valid parameter."),
        # the first problem in group order wins
        ("[{label: a, parameters: [nope]}, {label: b}]", StackValidationFailed,
         PREFIX + "parameter_groups.a: The grouped parameter nope does not reference a valid parameter."),
        ("[{label: a, parameters: [KeyName]}, {label: b}]", StackValidationFailed,
         PREFIX + "parameter_groups.b: The parameters must be provided for each parameter group."),
        # where Heat's own code crashes (AttributeError, HTTP 400)
        ("[KeyName]", UnhandledPythonError, "'str' object has no attribute 'get'"),
        ("[null]", UnhandledPythonError, "'NoneType' object has no attribute 'get'"),
        ("[{label: null}]", UnhandledPythonError, "'NoneType' object has no attribute 'isdigit'"),
        ("[{label: [x], parameters: [nope]}]", UnhandledPythonError,
         "'list' object has no attribute 'isdigit'"),
    ],
)
def test_invalid_groups(text: str, error: type[TemplateError], message: str) -> None:
    with pytest.raises(error) as err:
        validate_parameter_groups(yaml.safe_load(text), NAMES)
    assert str(err.value) == message
    assert status_of(err.value) == 400


def test_error_carries_heats_structure() -> None:
    with pytest.raises(StackValidationFailed) as err:
        validate_parameter_groups([{"label": "L", "parameters": ["nope"]}], NAMES)
    assert err.value.error == "Parameter Groups error"
    assert err.value.path == ("parameter_groups", "L")
    assert err.value.error_type == "StackValidationFailed"
