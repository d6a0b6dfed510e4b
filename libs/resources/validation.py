"""Heat's validation of a stack's resources before anything is stored: create, preview, update.

Heat validates a new or updated stack with every resource in its ``INIT``
state: ``get_resource`` gives the resource's name, ``get_attr`` gives null,
and a property whose value reads any resource is converted to its type but
not checked against its constraints. Everything else (literals, parameters,
files, functions of them) is known and checked: a function that fails to
resolve is the property's error (``Property error: resources.<r>.properties.<p>:
<message>``), never a 500.

:class:`PluginChecks` is what :class:`~libs.template.stack.StackDefinition`
asks (``ResourceChecks``): its validation then runs each resource's checks
right after the resource's functions, in dependency order, as Heat's does.
:func:`check_properties` is the check of one resource, for whoever validates
a stack of their own (nested stacks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from libs.resources.base import ResourceType
from libs.resources.properties import Unresolvable
from libs.resources.registry import Registry
from libs.template import errors
from libs.template.definitions import ResourceDefinition
from libs.template.functions import base
from libs.template.registry import ResourceRegistry
from libs.template.resolution import StackResolver
from libs.template.stack import StackDefinition


class NotYetCreated:
    """Resource data of a stack none of whose resources exist yet (Heat's ``INIT`` resources)."""

    def reference(self, resource: str) -> Any:
        return resource

    def attribute(self, resource: str, attribute: str) -> Any:
        return None

    def all_attributes(self, resource: str) -> dict[str, Any] | None:
        return None


def check_properties(definition: ResourceDefinition, plugin: ResourceType, resolver: base.Resolver, *,
                     resource_section: str = "resources", properties_section: str = "properties",
                     with_values: bool = True) -> None:
    """Heat's ``Properties.validate`` of one resource, raising ``StackValidationFailed``.

    ``with_values`` false is ``POST /validate``'s: property names only. Each
    property is resolved on its own, so a failing function fails only the
    property it sits in, and only once validation reads that property.
    """
    path = (resource_section, definition.name)
    snippet = {} if definition.properties is None else definition.properties
    if plugin.ignores_properties:
        return
    if isinstance(snippet, base.Function):
        # Heat iterates the properties' names, which a function does not have.
        kind = snippet.heat_name or type(snippet).__name__
        raise errors.StackValidationFailed(f"'{kind}' object is not iterable", path, error="TypeError")
    values: dict[Any, Any] = {}
    unchecked: set[str] = set()
    for key, value in snippet.items():
        try:
            resolved = base.resolve(value, resolver, nullable=True)
        except errors.StackValidationFailed as exc:
            resolved = Unresolvable(exc.detail, exc.path)
        except Exception as exc:  # any failure of a function is the property's error, as in Heat
            resolved = Unresolvable(str(exc))
        if resolved is base.REMOVED:
            continue  # as if the property were not given
        values[key] = resolved
        if with_values and next(base.dependencies(value), None) is not None:
            unchecked.add(key)
    try:
        plugin.validate(values, resource_name=definition.name, resource_section=resource_section,
                        properties_section=properties_section, strict_values=with_values,
                        unchecked=unchecked)
    except errors.TemplateError:
        raise
    except Exception as exc:  # a plugin's own failure: Heat names its class and the resource
        raise errors.StackValidationFailed(str(exc), path, error=type(exc).__name__) from None


class PluginChecks:
    """The ``ResourceChecks`` of a stack whose types the plugin ``registry`` implements.

    ``environment`` is the stack's ``resource_registry``; ``with_values`` false
    checks property names only (``POST /validate``).
    """

    def __init__(self, registry: Registry, environment: ResourceRegistry, *,
                 with_values: bool = True) -> None:
        self._registry = registry
        self._environment = environment
        self._with_values = with_values
        self._resolvers: dict[int, tuple[StackDefinition, StackResolver]] = {}

    def _plugin(self, resource_type: str, resource_name: str) -> ResourceType | None:
        try:
            return self._registry.implementing(resource_type, resource_name=resource_name,
                                               environment=self._environment)
        except KeyError:
            return None  # an unknown type: reported on its own

    def has_attribute(self, resource_type: str, resource_name: str, attribute: Any) -> bool:
        plugin = self._plugin(resource_type, resource_name)
        return plugin is None or plugin.attributes_open or plugin.has_attribute(attribute)

    def class_name(self, resource_type: str, resource_name: str) -> str:
        plugin = self._plugin(resource_type, resource_name)
        return resource_type if plugin is None else plugin.heat_class_name()

    def _resolver(self, stack: StackDefinition) -> StackResolver:
        # One resolver per stack validated (a stack's checks run once per resource).
        held = self._resolvers.get(id(stack))
        if held is None or held[0] is not stack:
            held = (stack, StackResolver(stack, NotYetCreated()))
            self._resolvers[id(stack)] = held
        return held[1]

    def check(self, stack: StackDefinition, name: str) -> None:
        definition = stack.resources[name]
        plugin = self._plugin(definition.type, name)
        if plugin is None:
            return
        d = stack.template.dialect
        check_properties(definition, plugin, self._resolver(stack), resource_section=d.resources,
                         properties_section=d.res_properties, with_values=self._with_values)


def plugin_checks(registry: Registry, *, with_values: bool = True
                  ) -> Callable[[ResourceRegistry], PluginChecks]:
    """What ``libs.template.request.load`` takes to validate a stack with these plugins."""
    def make(environment: ResourceRegistry) -> PluginChecks:
        return PluginChecks(registry, environment, with_values=with_values)
    return make

