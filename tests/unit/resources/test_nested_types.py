"""What a type name means for nesting: templates by mapping, implementations, nested failures."""

from __future__ import annotations

from typing import Any

import pytest

from libs.resources.nested import TemplateResource, nested_failure
from libs.resources.none import NoneResource
from libs.resources.random_string import RandomString
from libs.resources.registry import default_registry
from libs.template.environment import Environment
from libs.template.registry import ResourceRegistry

REGISTRY = default_registry()


def _env(registry: dict[str, Any]) -> Environment:
    return Environment.from_dict({"resource_registry": registry})


def test_a_builtin_name_mapped_to_a_template_is_a_template_resource() -> None:
    env = _env({"OS::Heat::RandomString": "rs.yaml"}).registry
    plugin = REGISTRY.implementing("OS::Heat::RandomString", resource_name="a", environment=env)
    assert isinstance(plugin, TemplateResource) and plugin.template_key == "rs.yaml"
    # Without the environment (or with one that does not map it) the name is the builtin.
    assert isinstance(REGISTRY.implementing("OS::Heat::RandomString", resource_name="a", environment=None),
                      RandomString)


def test_a_mapping_for_one_resource_reaches_that_resource_only() -> None:
    env = _env({"resources": {"a": {"OS::Heat::RandomString": "rs.yaml"}}}).registry
    assert isinstance(REGISTRY.implementing("OS::Heat::RandomString", resource_name="a", environment=env),
                      TemplateResource)
    assert isinstance(REGISTRY.implementing("OS::Heat::RandomString", resource_name="b", environment=env),
                      RandomString)


def test_a_builtin_name_mapped_to_another_builtin_runs_that_one() -> None:
    env = _env({"OS::Heat::RandomString": "OS::Heat::None"}).registry
    assert isinstance(REGISTRY.implementing("OS::Heat::RandomString", resource_name="a", environment=env),
                      NoneResource)


@pytest.mark.parametrize("registry", [
    {"OS::Heat::RandomString": "rs.yaml"},
    {"resources": {"a": {"OS::Heat::RandomString": "rs.yaml"}}},
], ids=["global", "per resource"])
def test_inside_the_template_the_mapped_name_means_the_builtin(registry: dict[str, Any]) -> None:
    env = _env(registry)
    plugin = REGISTRY.implementing("OS::Heat::RandomString", resource_name="a", environment=env.registry)
    assert isinstance(plugin, TemplateResource)
    child = env.child_environment("a", {}, remove=plugin.resolved).registry
    inner = REGISTRY.implementing("OS::Heat::RandomString", resource_name="inner", environment=child)
    assert isinstance(inner, RandomString)


def test_implementations_are_the_plugin_classes_and_every_template_is_one() -> None:
    env = _env({"My::A": "OS::Heat::RandomString", "My::B": "OS::Heat::RandomString",
                "My::P": "p.yaml", "My::Q": "q.yaml"}).registry

    def impl(type_name: str, environment: ResourceRegistry | None = env) -> object:
        return REGISTRY.implementation(type_name, resource_name="r", environment=environment)

    assert impl("My::A") is impl("My::B") is impl("OS::Heat::RandomString") is RandomString
    assert impl("My::P") is impl("My::Q") is impl("other.yaml") is TemplateResource
    assert impl("OS::Heat::None") is NoneResource
    assert impl("Nothing::Here") is None
    # The same name re-pointed by another environment is another implementation.
    assert impl("My::A", _env({"My::A": "OS::Heat::None"}).registry) is NoneResource


@pytest.mark.parametrize(("reason", "action", "expected"), [
    ("Resource CREATE failed: ValueError: resources.bad: Test Resource failed bad", "CREATE",
     "ValueError: resources.p.resources.bad: Test Resource failed bad"),
    ("Resource CREATE failed: ValueError: resources.q.resources.bad: Test Resource failed bad", "CREATE",
     "ValueError: resources.p.resources.q.resources.bad: Test Resource failed bad"),
    # Group members are numbered: Heat renders a digit in the path as an index.
    ("Resource CREATE failed: ValueError: resources.0.resources.t: Test Resource failed t", "CREATE",
     "ValueError: resources.p.resources[0].resources.t: Test Resource failed t"),
    # Heat splits at every colon and joins the message back with ": ".
    ("Resource UPDATE failed: Error: resources.x: a:b", "UPDATE", "Error: resources.p.resources.x: a: b"),
    # A reason of another action, or of another shape, is the message as it stands.
    ("Resource CREATE failed: ValueError: resources.bad: oops", "UPDATE",
     "resources.p: Resource CREATE failed: ValueError: resources.bad: oops"),
    ("Stack timed out", "CREATE", "resources.p: Stack timed out"),
])
def test_a_nested_failure_reads_as_heats(reason: str, action: str, expected: str) -> None:
    assert nested_failure(reason, action).status_reason("resources", "p") == expected
