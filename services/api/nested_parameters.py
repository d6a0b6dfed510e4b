"""``NestedParameters`` of ``POST /validate?show_nested=true``: the parameters of every nested stack.

For each resource that would make a nested stack, Heat builds that stack
without creating anything and shows its parameters the way ``/validate``
shows the top stack's, recursively. A provider template's stack gets the
resource's properties as parameter values (so they show as ``Value``); a group
is shown with one member (Heat sizes it to 1 for this), whose own nested stack
is shown under it. ``OS::Heat::Stack`` has none (Heat's is a remote stack).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from libs.resources import nesting
from libs.resources.registry import Registry
from libs.template import errors
from libs.template.limits import Limits
from libs.template.request import LoadedStack, StackRequest, ValidateFailed, load
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.validation_output import nested_entry


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
            child = self._child(stack, resolver, name)
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

    def _child(self, stack: LoadedStack, resolver: StackResolver, name: str
               ) -> tuple[Any, dict[str, Any]] | None:
        """The nested stack's template and environment (which carries its parameter values), or None."""
        plugin = nesting.plugin_of(self.registry, stack, name)
        if plugin is None or not nesting.expands(plugin):
            return None
        try:
            properties = nesting.typed_properties(plugin, stack, name, resolver)
        except errors.StackValidationFailed:
            # /validate checks no property (Heat's does not): the child gets them as given.
            properties = dict(resolver.properties(name) or {})
        # The request the worker would make, with a group of one member (Heat's size-1 group here).
        request = nesting.child_request(plugin, stack, name, properties, stack_name="dummy", one_member=True)
        if request is None or request.template is None:
            return None  # a provider template not sent in files: Ember fetches no URL
        return request.template, dict(request.environment)

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
