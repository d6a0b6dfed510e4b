"""Nested stacks before they exist: the child a nesting resource would make, and Heat's checks of it."""

from __future__ import annotations

from typing import Any

import pytest

from libs.resources import nesting
from libs.resources.nested import TemplateResource
from libs.resources.registry import default_registry
from libs.resources.steps import Nest
from libs.template.errors import StackValidationFailed
from libs.template.request import LoadedStack, StackRequest, load
from libs.template.template import Template

CHILD = """
heat_template_version: 2016-10-14
parameters:
  x: {type: string}
  n: {type: number, default: 1}
  l: {type: comma_delimited_list, default: []}
  j: {type: json, default: {}}
  c: {type: string, default: red, constraints: [{allowed_values: [red, blue]}]}
  d: {type: string}
resources:
  s: {type: OS::Heat::None}
"""
REGISTRY = default_registry()


def _stack(resources: dict[str, Any], files: dict[str, str] | None = None,
           environment: dict[str, Any] | None = None) -> LoadedStack:
    template = {"heat_template_version": "2016-10-14", "resources": resources}
    request = StackRequest(template=template, files=files or {"child.yaml": CHILD}, environment=environment)
    return load(request, stack_name="top", stack_id="None", project_id="demo", builtin_types=REGISTRY.types())


def _check(stack: LoadedStack) -> str:
    with pytest.raises(StackValidationFailed) as caught:
        nesting.check(stack, nesting.Expansion(REGISTRY, "demo"), stack_name="top")
    return str(caught.value)


def test_provider_schema_is_the_templates_parameters() -> None:
    schema = nesting.provider_schema(Template.load(CHILD), {"d": "from parameter_defaults"})
    assert {k: (p.type, p.required) for k, p in schema.items()} == {
        "x": ("string", True), "n": ("number", False), "l": ("list", False), "j": ("map", False),
        "c": ("string", False), "d": ("string", False)}
    assert schema["j"].allow_conversion and schema["l"].allow_conversion
    assert all(p.update_allowed for p in schema.values())


def test_provider_parameters_are_heats_child_params() -> None:
    schema = nesting.provider_schema(Template.load(CHILD), {})
    given = {"x": "a", "n": None, "l": ["p", None, 3], "j": {"k": [1]}}
    assert nesting.provider_parameters(schema, given) == {"x": "a", "l": "p,,3", "j": {"k": [1]}}
    assert nesting.provider_parameters(schema, {"l": [{"a": 1, "b": 2}, {"a": 3}]}) == {
        "l": ".member.0.a=1,.member.0.b=2,.member.1.a=3"}


def test_provided_gives_the_template_text_and_the_properties_as_parameters() -> None:
    stack = _stack({"a": {"type": "child.yaml", "properties": {"x": "hi", "l": ["p", "q"]}}})
    plugin = REGISTRY.implementing("child.yaml", resource_name="a", environment=stack.environment.registry)
    assert isinstance(plugin, TemplateResource)
    request = nesting.provided(plugin, "a", Nest("create", template="child.yaml",
                                                 parameters={"x": "hi", "l": ["p", "q"]}), stack)
    assert request.template == CHILD and request.files == {"child.yaml": CHILD}
    assert request.environment["parameters"] == {"x": "hi", "l": "p,q"}
    assert request.parameters == {}
    assert request.facade == {"metadata": {}, "deletion_policy": "Delete", "update_policy": {}}


def test_a_group_is_expanded_to_its_members_or_to_one() -> None:
    stack = _stack({"g": {"type": "OS::Heat::ResourceGroup",
                          "properties": {"count": 3, "resource_def": {"type": "OS::Heat::None"}}}})
    plugin = REGISTRY.get("OS::Heat::ResourceGroup")
    props = {"count": 3, "resource_def": {"type": "OS::Heat::None"}, "index_var": "%index%"}
    for one, members in ((False, ["0", "1", "2"]), (True, ["0"])):
        how = nesting.Expansion(REGISTRY, "demo", one_member=one)
        nested = nesting.expand(stack, "g", plugin, props, stack_name="top", how=how)
        assert nested is not None and nested.where == "g<nested_stack>"
        assert list(nested.stack.definition.resources) == members


@pytest.mark.parametrize(("properties", "message"), [
    ({"x": "1", "zz": 3}, "Property error: resources.a.properties: Unknown Property zz"),
    ({"n": 2, "d": "x"}, "Property error: resources.a.properties: Property x not assigned"),
    ({"x": "1", "d": "x", "n": "abc"},
     "Property error: resources.a.properties.n: could not convert string to float: 'abc'"),
    ({"x": "1", "d": "x", "l": {"k": 1}},
     "Property error: resources.a.properties.l: \"{'k': 1}\" is not a list"),
    ({"x": "1", "d": "x", "c": "green"},
     'Property error: resources.a.properties.c: "green" is not an allowed value ["red", "blue"]'),
])
def test_a_provider_templates_properties_are_checked_against_its_parameters(
        properties: dict[str, Any], message: str) -> None:
    assert _check(_stack({"a": {"type": "child.yaml", "properties": properties}})) == message


def test_values_read_from_other_resources_are_not_checked_before_they_exist() -> None:
    nesting.check(_stack({
        "r": {"type": "OS::Heat::RandomString"},
        "a": {"type": "child.yaml", "properties": {"x": {"get_attr": ["r", "value"]}, "d": "x",
                                                   "n": {"get_attr": ["r", "value"]},
                                                   "c": {"get_attr": ["r", "value"]},
                                                   "j": '{"k": 1}', "l": "p,q"}}}),
        nesting.Expansion(REGISTRY, "demo"), stack_name="top")


def test_failures_inside_nested_stacks_carry_the_path_of_the_nesting_resources() -> None:
    files = {"outer.yaml": "heat_template_version: 2016-10-14\nresources:\n  mid: {type: mid.yaml}\n",
             "mid.yaml": "heat_template_version: 2016-10-14\nresources:\n  bad: {type: OS::No::Such}\n",
             "child.yaml": CHILD}
    unknown = "The Resource Type (OS::No::Such) could not be found."
    assert _check(_stack({"o": {"type": "outer.yaml"}}, files)) == (
        f"resources.o<outer.yaml>.resources.mid<mid.yaml>: {unknown}")
    group = {"type": "OS::Heat::ResourceGroup",
             "properties": {"count": 2, "resource_def": {"type": "outer.yaml"}}}
    assert _check(_stack({"g": group}, files)) == (
        "resources.g<nested_stack>.resources.0<outer.yaml>.resources.mid<mid.yaml>: "
        "The Resource Type (OS::No::Such) could not be found.")
    # Inside a nested stack only the names of properties are checked, as Heat does.
    assert _check(_stack({"g": {"type": "OS::Heat::ResourceGroup", "properties": {
        "resource_def": {"type": "child.yaml", "properties": {"x": "1", "d": "x", "zz": 3}}}}})) == (
        "Property error: resources.g<nested_stack>.resources[0].properties: Unknown Property zz")


def test_a_group_checks_its_member_type_itself_and_an_empty_group_nothing() -> None:
    assert _check(_stack({"g": {"type": "OS::Heat::ResourceGroup", "properties": {
        "count": 2, "resource_def": {"type": "OS::No::Such"}}}})) == (
        "The Resource Type (OS::No::Such) could not be found.")
    assert _check(_stack({"g": {"type": "OS::Heat::AutoScalingGroup", "properties": {
        "min_size": 1, "max_size": 2, "resource": {"type": "OS::No::Such"}}}})) == (
        "resources.g<nested_stack>: The Resource Type (OS::No::Such) could not be found.")
    nesting.check(_stack({"g": {"type": "OS::Heat::ResourceGroup", "properties": {
        "count": 0, "resource_def": {"type": "OS::No::Such"}}}}), nesting.Expansion(REGISTRY, "demo"),
        stack_name="top")


@pytest.mark.parametrize(("running_for", "delay"), [
    (None, 0.5),  # no child yet
    (0.0, 0.5),
    (3.0, 0.5),
    (40.0, 4.0),  # a tenth of the time it has run
    (3600.0, 10.0),  # at most
])
def test_a_nested_stack_under_way_is_looked_at_less_often_the_longer_it_runs(
        running_for: float | None, delay: float) -> None:
    from libs.resources.nested import poll_delay
    from libs.resources.steps import ChildStack

    child = None if running_for is None else ChildStack(
        id="c", name="c", action="CREATE", status="IN_PROGRESS", status_reason="", running_for=running_for)
    assert poll_delay(child) == delay
