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

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from libs.resources.attributes import SHOW
from libs.resources.base import ResourceType
from libs.resources.implicit import implicit_dependencies
from libs.resources.properties import Unresolvable
from libs.resources.registry import Registry
from libs.template import errors
from libs.template.constraints import CustomConstraints
from libs.template.definitions import ResourceDefinition
from libs.template.environment import Environment
from libs.template.functions import base
from libs.template.request import parameter_schemas
from libs.template.resolution import StackResolver
from libs.template.stack import StackDefinition
from libs.template.template import Template

# The property type a provider template's parameter becomes (Heat's ``Schema.from_parameter``).
_FROM_PARAMETER = {"string": "String", "number": "Number", "comma_delimited_list": "List", "json": "Map",
                   "boolean": "Boolean"}
# The property type a parameter must have to stand for a facade's property of each type.
_PARAMETER_FOR = {"Integer": "Number", "String": "String", "Number": "Number", "Boolean": "Boolean",
                  "List": "List", "Map": "Map"}


class NotYetCreated:
    """Resource data of a stack none of whose resources exist yet (Heat's ``INIT`` resources)."""

    def reference(self, resource: str) -> Any:
        return resource

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        return None

    def all_attributes(self, resource: str) -> dict[str, Any] | None:
        return None


def refuse_function(snippet: Any, path: tuple[str, str]) -> None:
    """Heat iterates the names of a resource's properties (and of its update policy), which a
    function in place of the whole section does not have: Python's TypeError, named so."""
    if isinstance(snippet, base.Function):
        kind = snippet.heat_name or type(snippet).__name__
        raise errors.StackValidationFailed(f"'{kind}' object is not iterable", path, error="TypeError")


def check_properties(definition: ResourceDefinition, plugin: ResourceType, resolver: base.Resolver, *,
                     resource_section: str = "resources", properties_section: str = "properties",
                     with_values: bool = True, custom_constraints: CustomConstraints | None = None) -> None:
    """Heat's ``Properties.validate`` of one resource, raising ``StackValidationFailed``.

    ``with_values`` false is ``POST /validate``'s: property names only. Each
    property is resolved on its own, so a failing function fails only the
    property it sits in, and only once validation reads that property.
    """
    path = (resource_section, definition.name)
    snippet = {} if definition.properties is None else definition.properties
    if plugin.ignores_properties:
        return
    refuse_function(snippet, path)
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
                        custom_constraints=custom_constraints, unchecked=unchecked)
    except errors.TemplateError:
        raise
    except Exception as exc:  # a plugin's own failure: Heat names its class and the resource
        raise errors.StackValidationFailed(str(exc), path, error=type(exc).__name__) from None


@dataclasses.dataclass(frozen=True)
class Interface:
    """What a type offers: each property's Heat type and whether it is required; its attributes."""

    properties: Mapping[str, tuple[str, bool]]
    attributes: tuple[str, ...]

    @classmethod
    def of_plugin(cls, plugin: ResourceType) -> Interface:
        return cls({n: (p.type_name, p.required) for n, p in plugin.properties_schema.items()},
                   (*plugin.attributes_schema, SHOW))

    @classmethod
    def of_template(cls, template: Template, parameter_defaults: Mapping[str, Any]) -> Interface:
        """A provider template's: its parameters as properties, its outputs as attributes."""
        properties = {name: (_FROM_PARAMETER[schema.type],
                             schema.default is None and name not in parameter_defaults)
                      for name, schema in parameter_schemas(template).items()}
        return cls(properties, (*template.outputs_section, SHOW))


def check_facade(resource_type: str, provider: Interface, facade: Interface) -> None:
    """Heat's check of a provider template against the type it stands in for (its facade).

    KeyError for a facade property of a type no parameter can have (``Any``).
    """
    for name, (facade_type, required) in facade.properties.items():
        if required and name not in provider.properties:
            raise errors.StackValidationFailed(
                f"Required property {name} for facade {resource_type} missing in provider")
        if name in provider.properties:
            provider_type = provider.properties[name][0]
            # A facade property of type Any has no parameter type: Heat's lookup fails (KeyError).
            if _PARAMETER_FOR[facade_type] != provider_type:
                raise errors.StackValidationFailed(
                    f"Property {name} type mismatch between facade {resource_type} ({facade_type}) "
                    f"and provider ({provider_type})")
    for name, (_, required) in provider.properties.items():
        if required and name not in facade.properties:
            raise errors.StackValidationFailed(
                f"Provider requires property {name} unknown in facade {resource_type}")
    for attribute in facade.attributes:
        if attribute not in provider.attributes:
            raise errors.StackValidationFailed(
                f"Attribute {attribute} for facade {resource_type} missing in provider")


class PluginChecks:
    """The ``ResourceChecks`` of a stack whose types the plugin ``registry`` implements.

    ``environment`` is the stack's; ``with_values`` false checks property
    names only (``POST /validate``); ``custom_constraints``: what properties'
    ``custom_constraint`` names mean (None: the ones that need no cloud).
    """

    def __init__(self, registry: Registry, environment: Environment, *,
                 with_values: bool = True, custom_constraints: CustomConstraints | None = None) -> None:
        self._custom = custom_constraints
        self._registry = registry
        self._environment = environment
        self._types = environment.registry.with_builtin_types(registry.types())
        self._with_values = with_values
        self._resolvers: dict[int, tuple[StackDefinition, StackResolver]] = {}

    def _plugin(self, resource_type: str, resource_name: str) -> ResourceType | None:
        try:
            return self._registry.implementing(resource_type, resource_name=resource_name,
                                               environment=self._environment.registry)
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
        self._check_update_policy(stack, definition, plugin)
        check_properties(definition, plugin, self._resolver(stack), resource_section=d.resources,
                         properties_section=d.res_properties, with_values=self._with_values,
                         custom_constraints=self._custom)
        if self._with_values:
            self._check_facade(stack, definition)
            plugin.validate_in_stack(name, stack, lambda other: self.class_name(
                stack.resources[other].type, other))

    def _check_update_policy(self, stack: StackDefinition, definition: ResourceDefinition,
                             plugin: ResourceType) -> None:
        """Heat validates the update_policy, against the type's schema, before the properties; a
        function that fails there is the template's error now, not the worker's on every delivery
        later. ``POST /validate`` checks it too, where its functions resolve."""
        d = stack.template.dialect
        if self._with_values:
            refuse_function(definition.update_policy, (d.resources, definition.name))
            policy = self._resolver(stack).update_policy(definition.name)
        else:
            try:
                policy = self._resolver(stack).update_policy(definition.name)
            except Exception:
                return  # what it reads has no value yet: the stack's create checks it
        plugin.validate_update_policy(policy, resource_name=definition.name, resource_section=d.resources,
                                      section=d.res_update_policy)

    def implicit_dependencies(self, stack: StackDefinition) -> Mapping[str, set[str]]:
        return implicit_dependencies(stack)

    def _check_facade(self, stack: StackDefinition, definition: ResourceDefinition) -> None:
        """A provider template of a type something else provides too must offer its interface."""
        found = self._types.resolve(definition.name, definition.type)
        if found is None or not found.is_template:
            return
        facade = self._types.resolve(definition.name, definition.type, ignore=found)
        if facade is None:
            return
        files = stack.template.files
        defaults = self._environment.parameter_defaults
        try:
            provider = Interface.of_template(Template.load(files[found.template or ""], files), defaults)
            if facade.is_template:
                behind = Interface.of_template(Template.load(files[facade.template or ""], files), defaults)
            else:
                behind = Interface.of_plugin(self._registry.get(facade.type_name))
        except (KeyError, errors.TemplateError):
            return  # a template that cannot be had or read fails as the nested stack's own error
        try:
            check_facade(definition.type, provider, behind)
        except KeyError as exc:  # Heat names the escaping Python error and the resource
            raise errors.StackValidationFailed(
                str(exc), (stack.template.dialect.resources, definition.name), error="KeyError") from None


def plugin_checks(registry: Registry, *, with_values: bool = True,
                  custom_constraints: CustomConstraints | None = None
                  ) -> Callable[[Environment], PluginChecks]:
    """What ``libs.template.request.load`` takes to validate a stack with these plugins."""
    def make(environment: Environment) -> PluginChecks:
        return PluginChecks(registry, environment, with_values=with_values,
                            custom_constraints=custom_constraints)
    return make

