"""Validation of a stack's resources before anything is stored, as Heat's engine does it.

The messages below are Heat 27.0.1's (the parity cases under
tests/heat_parity/cases/validation hold the recorded answers these mirror).
"""

from __future__ import annotations

from typing import Any

import pytest

from libs.resources.registry import default_registry
from libs.resources.validation import Interface, check_facade, plugin_checks
from libs.template import errors
from libs.template.request import LoadedStack, StackRequest, load

REGISTRY = default_registry()


def _load(resources: dict[str, Any], *, parameters: dict[str, Any] | None = None,
          outputs: dict[str, Any] | None = None, files: dict[str, str] | None = None,
          environment: dict[str, Any] | None = None, with_values: bool = True) -> LoadedStack:
    template: dict[str, Any] = {"heat_template_version": "2017-02-24", "resources": resources}
    if parameters:
        template["parameters"] = parameters
    if outputs:
        template["outputs"] = outputs
    return load(StackRequest(template=template, files=files or {}, environment=environment),
                stack_name="s", stack_id="i", project_id="p", builtin_types=REGISTRY.types(),
                checks=plugin_checks(REGISTRY, with_values=with_values))


def _error(**kwargs: Any) -> tuple[str, str]:
    with pytest.raises(errors.TemplateError) as info:
        _load(**kwargs)
    return info.value.error_type, str(info.value)


@pytest.mark.parametrize(("value", "message"), [
    ({"get_file": "missing.txt"}, 'No content found in the "files" section for get_file path: missing.txt'),
    ({"map_replace": [{"a": 1, "b": 2}, {"keys": {"a": "b"}}]},
     "key replacement b collides with a key in the input map"),
    ({"str_replace_strict": {"template": "hello", "params": {"absent": "x"}}},
     "The following params were not found in the template: absent"),
])
def test_a_function_that_fails_is_the_propertys_error(value: Any, message: str) -> None:
    assert _error(resources={"a": {"type": "OS::Heat::Value", "properties": {"value": value}}}) == (
        "StackValidationFailed", f"Property error: resources.a.properties.value: {message}")


def test_known_values_are_converted_and_constrained() -> None:
    assert _error(resources={"a": {"type": "OS::Heat::TestResource",
                                   "properties": {"fail": {"get_param": "p"}}}},
                  parameters={"p": {"type": "string", "default": "yes"}}) == (
        "StackValidationFailed", 'Property error: resources.a.properties.fail: "yes" is not a valid boolean')
    assert _error(resources={"a": {"type": "OS::Heat::RandomString", "properties": {"length": 1000}}}) == (
        "StackValidationFailed",
        "Property error: resources.a.properties.length: 1000 is out of range (min: 1, max: 512)")


def test_values_of_resources_not_yet_created_are_converted_not_constrained() -> None:
    # get_attr is null (the default then applies) and the constraints are not checked...
    _load({"b": {"type": "OS::Heat::RandomString"},
           "a": {"type": "OS::Heat::RandomString",
                 "properties": {"length": {"get_attr": ["b", "value"]}, "salt": {"get_resource": "b"},
                                "character_classes": [{"class": {"get_attr": ["b", "value"]}}]}}})
    # ...but get_resource is the resource's name, which is no boolean.
    assert _error(resources={"b": {"type": "OS::Heat::None"},
                             "a": {"type": "OS::Heat::TestResource",
                                   "properties": {"fail": {"get_resource": "b"}}}}) == (
        "StackValidationFailed", 'Property error: resources.a.properties.fail: "b" is not a valid boolean')


@pytest.mark.parametrize(("group", "properties", "message"), [
    ("SoftwareDeploymentGroup", {}, "resources.g.properties: Property servers not assigned"),
    ("SoftwareDeploymentGroup", {"servers": "web"}, 'resources.g.properties.servers: "web" is not a map'),
    ("SoftwareDeploymentGroup", {"servers": {}, "count": 2},
     "resources.g.properties: Unknown Property count"),
    ("SoftwareDeploymentGroup", {"servers": {}, "signal_transport": "SMOKE"},
     'resources.g.properties.signal_transport: "SMOKE" is not an allowed value ["CFN_SIGNAL", '
     '"TEMP_URL_SIGNAL", "HEAT_SIGNAL", "NO_SIGNAL", "ZAQAR_SIGNAL"]'),
    ("SoftwareDeploymentGroup", {"servers": {}, "actions": ["CREATE", "REBOOT"]},
     'resources.g.properties.actions: ["CREATE", "REBOOT"] is not an allowed value '
     '["CREATE", "UPDATE", "DELETE", "SUSPEND", "RESUME"]'),
    ("StructuredDeploymentGroup", {"servers": {}, "input_values_validate": "MEDIUM"},
     'resources.g.properties.input_values_validate: "MEDIUM" is not an allowed value ["LAX", "STRICT"]'),
    ("SoftwareDeploymentGroup", {"servers": {}, "input_key": "get_input"},
     "resources.g.properties: Unknown Property input_key"),
])
def test_a_deployment_groups_properties_are_checked_as_heats(group: str, properties: dict[str, Any],
                                                             message: str) -> None:
    assert _error(resources={"g": {"type": f"OS::Heat::{group}", "properties": properties}}) == (
        "StackValidationFailed", f"Property error: {message}")


def test_none_reads_no_property_and_properties_must_be_a_map() -> None:
    _load({"a": {"type": "OS::Heat::None", "properties": {"x": {"get_file": "missing.txt"}}}})
    assert _error(resources={"a": {"type": "OS::Heat::TestResource", "properties": {"get_param": "p"}}},
                  parameters={"p": {"type": "json", "default": {}}}) == (
        "StackValidationFailed", "TypeError: resources.a: 'GetParam' object is not iterable")


def test_resources_are_checked_in_dependency_order() -> None:
    # b comes first (a needs it), so its bad property is what fails, not a's.
    assert _error(resources={
        "a": {"type": "OS::Heat::TestResource",
              "properties": {"fail": "maybe", "value": {"get_resource": "b"}}},
        "b": {"type": "OS::Heat::TestResource", "properties": {"wait_secs": "abc"}}}) == (
        "StackValidationFailed",
        "Property error: resources.b.properties.wait_secs: could not convert string to float: 'abc'")


def test_validate_checks_names_not_values() -> None:
    _load({"a": {"type": "OS::Heat::TestResource", "properties": {"fail": "maybe"}}}, with_values=False)
    assert _error(resources={"a": {"type": "OS::Heat::TestResource", "properties": {"bogus": 1}}},
                  with_values=False) == (
        "StackValidationFailed", "Property error: resources.a.properties: Unknown Property bogus")


def test_get_attr_must_name_an_attribute_of_the_type() -> None:
    assert _error(resources={"a": {"type": "OS::Heat::RandomString"}},
                  outputs={"o": {"value": {"get_attr": ["a", "nosuch"]}}}) == (
        "StackValidationFailed",
        "outputs.o.value.get_attr: The Referenced Attribute (a nosuch) is incorrect.")
    _load({"a": {"type": "OS::Heat::None"},
           "g": {"type": "OS::Heat::ResourceGroup",
                 "properties": {"resource_def": {"type": "OS::Heat::None"}}}},
          outputs={"o": {"value": [{"get_attr": ["a", "x"]}, {"get_attr": ["g", "y"]}]},
                   "s": {"value": {"get_attr": ["g", "show"]}}})


def test_a_cycle_names_heats_class_for_each_type() -> None:
    assert _error(resources={"b": {"type": "My::T", "depends_on": "b"}},
                  environment={"resource_registry": {"My::T": "OS::Heat::AutoScalingGroup"}}) == (
        "CircularDependencyException",
        'Circular Dependency Found: {AutoScalingResourceGroup "b": {AutoScalingResourceGroup "b"}}')


FACADE = Interface({"x": ("Integer", True), "y": ("String", False)}, ("out", "show"))


@pytest.mark.parametrize(("provider", "message"), [
    (Interface({}, ("out", "show")), "Required property x for facade T missing in provider"),
    (Interface({"x": ("String", True)}, ("out", "show")),
     "Property x type mismatch between facade T (Integer) and provider (String)"),
    (Interface({"x": ("Number", True), "z": ("String", True)}, ("out", "show")),
     "Provider requires property z unknown in facade T"),
    (Interface({"x": ("Number", False)}, ("show",)), "Attribute out for facade T missing in provider"),
])
def test_a_provider_must_offer_its_facades_interface(provider: Interface, message: str) -> None:
    with pytest.raises(errors.StackValidationFailed) as info:
        check_facade("T", provider, FACADE)
    assert str(info.value) == message
    check_facade("T", Interface({"x": ("Number", True), "w": ("Map", False)}, ("out", "show")), FACADE)


def test_a_facade_template_is_found_behind_the_per_resource_mapping() -> None:
    files = {"a.yaml": "heat_template_version: 2016-10-14\noutputs: {o: {value: 1}, p: {value: 2}}",
             "b.yaml": "heat_template_version: 2016-10-14\noutputs: {o: {value: 1}}"}
    env = {"resource_registry": {"My::T": "a.yaml", "resources": {"r": {"My::T": "b.yaml"}}}}
    assert _error(resources={"r": {"type": "My::T"}}, files=files, environment=env) == (
        "StackValidationFailed", "Attribute p for facade My::T missing in provider")
