"""From an API request to a validated stack (create/preview) or Heat's /validate answer."""

from __future__ import annotations

from typing import Any

import pytest

from libs.template import errors
from libs.template.limits import Limits
from libs.template.request import StackRequest, load, validate

BASIC = """
heat_template_version: 2018-08-31
description: A web server
parameter_groups:
  - label: sizing
    parameters: [flavor]
parameters:
  flavor:
    type: string
    label: Flavor
    description: Size of the server
    default: m1.small
    constraints:
      - allowed_values: [m1.small, m1.large]
        description: Pick a known flavor
  password:
    type: string
    hidden: true
    default: s3cret
resources:
  server:
    type: OS::Heat::None
    properties: {flavor: {get_param: flavor}}
"""


def test_validate_answers_heats_shape() -> None:
    body = validate(StackRequest(template=BASIC, parameters={"flavor": "m1.large"}), project_id="demo")
    assert body["Description"] == "A web server"
    assert body["ParameterGroups"] == [{"label": "sizing", "parameters": ["flavor"]}]
    flavor = body["Parameters"]["flavor"]
    assert flavor["Type"] == "String"
    assert flavor["Label"] == "Flavor"
    assert flavor["Default"] == "m1.small"
    assert flavor["Value"] == "m1.large"
    assert flavor["AllowedValues"] == ["m1.small", "m1.large"]
    assert flavor["ConstraintDescription"] == "Pick a known flavor"
    assert flavor["NoEcho"] == "false"
    # /validate shows a hidden parameter's default in clear, flagged NoEcho.
    assert body["Parameters"]["password"]["NoEcho"] == "true"
    assert body["Parameters"]["password"]["Default"] == "s3cret"
    assert "OS::stack_name" not in body["Parameters"]
    assert body["Environment"]["parameters"] == {"flavor": "m1.large"}
    assert body["Environment"]["resource_registry"] == {"resources": {}}


def test_validate_does_not_check_parameter_values() -> None:
    body = validate(StackRequest(template=BASIC, parameters={"flavor": "m9.huge"}), project_id="demo")
    assert body["Parameters"]["flavor"]["Value"] == "m9.huge"


def test_create_does_check_parameter_values() -> None:
    with pytest.raises(errors.StackValidationFailed) as info:
        load(StackRequest(template=BASIC, parameters={"flavor": "m9.huge"}), stack_name="s",
             stack_id=None, project_id="demo")
    assert str(info.value) == "Parameter 'flavor' is invalid: Pick a known flavor"


@pytest.mark.parametrize(
    ("template", "params", "error_type", "message"),
    [
        ("heat_template_version: 2015-04-30\nfoo: {}\nresources: {}\n", {},
         "HTTPBadRequest", "The template section is invalid: foo"),
        ("heat_template_version: 2011-01-01\nresources: {}\n", {},
         "InvalidTemplateVersion", None),
        (BASIC, {"nope": 1}, "UnknownUserParameter",
         "The Parameter (nope) was not defined in template."),
        ("heat_template_version: 2015-04-30\nresources:\n  a: {type: OS::Heat::None, depends_on: b}\n"
         "  b: {type: OS::Heat::None, depends_on: a}\n", {},
         "CircularDependencyException", "Circular Dependency Found: {b: {a}, a: {b}}"),
    ],
)
def test_validate_errors_keep_heats_types(template: str, params: dict[str, Any], error_type: str,
                                          message: str | None) -> None:
    with pytest.raises(errors.TemplateError) as info:
        validate(StackRequest(template=template, parameters=params), project_id="demo")
    assert info.value.error_type == error_type
    if message is not None:
        assert str(info.value) == message


def test_environment_files_merge_in_order_and_reach_parameters() -> None:
    files = {"env1.yaml": "parameters: {flavor: m1.large}\n",
             "env2.yaml": "parameter_defaults: {password: other}\n"}
    loaded = load(StackRequest(template=BASIC, files=files, environment_files=["env1.yaml", "env2.yaml"]),
                  stack_name="web", stack_id="id-1", project_id="demo")
    assert loaded.parameters.value("flavor") == "m1.large"
    assert loaded.parameters.value("password") == "other"
    assert loaded.parameters.display()["password"] == "******"
    assert loaded.parameters.value("OS::stack_name") == "web"


def test_unknown_resource_types_are_named_when_types_are_known() -> None:
    template = "heat_template_version: 2015-04-30\nresources:\n  a: {type: OS::Nova::Nothing}\n"
    message = r"The Resource Type \(OS::Nova::Nothing\) could not"
    with pytest.raises(errors.StackValidationFailed, match=message):
        load(StackRequest(template=template), stack_name="s", stack_id=None, project_id="p",
             builtin_types={"OS::Heat::None"})


def test_resource_limit() -> None:
    template = "heat_template_version: 2015-04-30\nresources:\n" + "".join(
        f"  r{i}: {{type: OS::Heat::None}}\n" for i in range(3))
    with pytest.raises(errors.RequestLimitExceeded):
        load(StackRequest(template=template), stack_name="s", stack_id=None, project_id="p",
             limits=Limits(max_resources_per_stack=2))
