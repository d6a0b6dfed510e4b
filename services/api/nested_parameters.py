"""``NestedParameters`` of ``POST /validate?show_nested=true``: the parameters of every nested stack.

For each resource that would make a nested stack, Heat builds that stack
without creating anything and shows its parameters the way ``/validate``
shows the top stack's, recursively. A provider template's stack gets the
resource's properties as parameter values (so they show as ``Value``); a group
is shown with one member (Heat sizes it to 1 for this), whose own nested stack
is shown under it. ``OS::Heat::Stack`` has none (Heat's is a remote stack).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from libs.resources.registry import Registry
from libs.resources.resource_group import MemberStack
from libs.resources.steps import StepContext
from libs.template import errors
from libs.template.limits import Limits
from libs.template.request import LoadedStack, StackRequest, ValidateFailed, load, parameter_schemas
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.template import Template
from libs.template.validation_output import nested_entry

# What makes each group kind build exactly one member (Heat's size-1 group for validation).
ONE_MEMBER: Mapping[str, Mapping[str, int]] = {
    "OS::Heat::ResourceGroup": {"count": 1},
    "OS::Heat::AutoScalingGroup": {"min_size": 1, "max_size": 1, "desired_capacity": 1},
}


def _as_parameter(value: list[Any]) -> str:
    """A list property as the comma-delimited text Heat hands a provider template's parameter."""
    if not value:
        return ""
    if isinstance(value[0], Mapping):
        return ",".join(f".member.{index}.{key}={item}"
                        for index, member in enumerate(value) for key, item in member.items())
    return ",".join("" if item is None else str(item) for item in value)


def _template_params(text: Any, properties: Mapping[str, Any], files: Mapping[str, str],
                     limits: Limits) -> dict[str, Any]:
    """The provider template's parameter values from the resource's properties (Heat's child_params)."""
    schemas = parameter_schemas(Template.load(text, files, max_size=limits.max_template_size))
    params: dict[str, Any] = {}
    for name, value in properties.items():
        if name not in schemas or value is None:
            continue
        listed = schemas[name].type == "comma_delimited_list" and isinstance(value, list)
        params[name] = _as_parameter(value) if listed else value
    return params


def _member_template(plugin: MemberStack, name: str, properties: Mapping[str, Any]) -> Any:
    typed = plugin.validate(properties, resource_name=name, strict_values=False)
    sized = {**typed, **ONE_MEMBER.get(plugin.type_name, {})}
    ctx = StepContext(stack_id="", stack_name="dummy", resource_name=name, physical_id=None,
                      properties=sized, old_properties=None, data={}, now=0.0, started_at=0.0,
                      short_id="", rng=random.Random())
    return plugin.child_request(ctx).template


class NestedParameters:
    """Builds the section for one validate request; ``registry`` knows the built-in types."""

    def __init__(self, registry: Registry, *, project_id: str, limits: Limits) -> None:
        self.registry = registry
        self.project_id = project_id
        self.limits = limits

    def of(self, stack: LoadedStack, files: Mapping[str, str], *, depth: int = 0) -> dict[str, Any]:
        """Resource name to its nested stack's entry, for the resources that nest one."""
        resolver = StackResolver(stack.definition, StaticResourceData())
        found: dict[str, Any] = {}
        for name, definition in stack.definition.resources.items():
            child = self._child(stack, resolver, name, definition.type, files)
            if child is None:
                continue
            template, environment = child
            nested = self._load(template, files, environment, name, depth)
            groups_key = nested.template.dialect.parameter_groups
            found[name] = nested_entry(
                resource_type=definition.type,
                description=nested.template.raw.get(nested.template.dialect.description),
                parameters=nested.parameters,
                parameter_groups=nested.template.raw.get(groups_key) if groups_key else None,
                nested=self.of(nested, files, depth=depth + 1))
        return found

    def _child(self, stack: LoadedStack, resolver: StackResolver, name: str, type_name: str,
               files: Mapping[str, str]) -> tuple[Any, dict[str, Any]] | None:
        """The nested stack's template and environment (which carries its parameter values), or None."""
        resolved = stack.environment.registry.resolve(name, type_name)
        if resolved is None:
            return None
        if resolved.is_template:
            text = files.get(resolved.template or "")
            if text is None:
                # Not sent in files: Ember fetches no URL, so there is nothing to show.
                return None
            params = _template_params(text, resolver.properties(name) or {}, files, self.limits)
            environment = stack.environment.child_environment(name, params, remove=resolved)
            return text, environment.to_dict()
        plugin = self.registry.get(resolved.type_name) if resolved.type_name in self.registry else None
        if not isinstance(plugin, MemberStack):
            return None
        template = _member_template(plugin, name, resolver.properties(name) or {})
        return template, stack.environment.child_environment(name).to_dict()

    def _load(self, template: Any, files: Mapping[str, str], environment: Mapping[str, Any],
              name: str, depth: int) -> LoadedStack:
        self.limits.check_nested_depth(depth)
        try:
            return load(StackRequest(template=template, files=files, environment=environment),
                        stack_name=f"dummy-{name}", stack_id=None, project_id=self.project_id,
                        limits=self.limits, builtin_types=self.registry.types(), validate_values=False)
        except errors.StackValidationFailed as exc:
            # As /validate shows the top stack's validation failures: a plain 400.
            raise ValidateFailed(str(exc)) from None
