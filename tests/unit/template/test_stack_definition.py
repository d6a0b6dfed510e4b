"""Templates in, dependency graph / enabled resources / outputs or the exact error out.

Each case is a YAML file under fixtures/stacks: ``template`` (the document),
optional ``params`` (user parameter values), and ``expect``: either
``requires`` (resource -> what it must come after; only enabled resources
appear) with ``outputs``, or ``error`` (Heat's error type) and ``message``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from libs.template import errors
from libs.template.loader import HeatYamlLoader
from libs.template.parameters import Parameters
from libs.template.request import parameter_schemas
from libs.template.stack import StackDefinition
from libs.template.template import Template

CASES = sorted((Path(__file__).parent / "fixtures" / "stacks").glob("*.yaml"))


def _stack(raw: dict[str, Any], params: dict[str, Any]) -> StackDefinition:
    template = Template(raw)
    parameters = Parameters(parameter_schemas(template), dialect=template.version.kind,
                            user_params=params, stack_name="s", stack_id="id", project_id="p")
    parameters.validate()
    return StackDefinition(template, parameters)


def _load(case: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    # Heat's own YAML rules (dates stay strings), as a template sent as text gets.
    data = yaml.load(case.read_text(), Loader=HeatYamlLoader)
    return data["template"], data.get("params", {}), data["expect"]


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_stack_definition(case: Path) -> None:
    raw, params, expect = _load(case)
    if "error" in expect:
        with pytest.raises(errors.TemplateError) as info:
            stack = _stack(raw, params)
            stack.validate()
        assert info.value.error_type == expect["error"], str(info.value)
        if "message" in expect:
            assert str(info.value) == expect["message"]
        return
    stack = _stack(raw, params)
    stack.validate()
    graph = stack.graph()
    expected = {n: sorted(v) for n, v in expect["requires"].items()}
    assert {n: sorted(graph.requires(n)) for n in graph} == expected
    assert sorted(stack.outputs) == sorted(expect.get("outputs", []))
    disabled = sorted(k for k, o in stack.outputs.items() if not o.enabled)
    assert disabled == sorted(expect.get("disabled_outputs", []))
    for name, policy in expect.get("deletion_policies", {}).items():
        assert stack.resources[name].deletion_policy == policy


LAZY: dict[str, Any] = {"heat_template_version": "2016-10-14",
        "conditions": {"never": False},
        "resources": {"bad": {"type": "OS::Heat::None", "propertees": {}},
                      "off": {"type": "OS::Heat::None", "condition": "never"},
                      7: {"type": "OS::Heat::None", "properties": {"value": "seven"}},
                      "good": {"type": "OS::Heat::None", "properties": {"value": "v"}}}}


@pytest.mark.parametrize(("name", "found"), [("good", "v"), ("7", "seven"), ("off", None), ("absent", None)])
def test_a_resource_looked_up_by_name_is_parsed_alone(name: str, found: str | None) -> None:
    # A worker stepping one member of a big group parses that member, not its siblings: the
    # broken sibling says nothing until every resource is asked for.
    resources = _stack(LAZY, {}).resources
    assert (name in resources) is (found is not None)
    if found is None:
        with pytest.raises(KeyError):
            resources[name]
    else:
        assert resources[name].properties == {"value": found}


def test_going_through_every_resource_names_the_first_bad_one() -> None:
    stack = _stack(LAZY, {})
    assert stack.resources["good"].type == "OS::Heat::None"
    with pytest.raises(errors.StackValidationFailed, match="propertees"):
        list(stack.resources)
    fixed = {**LAZY, "resources": {k: v for k, v in LAZY["resources"].items() if k != "bad"}}
    assert list(_stack(fixed, {}).resources) == ["7", "good"]
