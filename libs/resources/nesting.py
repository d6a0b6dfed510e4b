"""Nested stacks known before they exist: what each nesting resource's child stack is made of.

A nesting plugin's step answers :class:`~libs.resources.steps.Nest` (its
``child_request``); :func:`provided` adds what only the parent's desired state
has: the files, the child environment, and for a provider template its text
and its properties as the child's parameters. The worker acts on that request;
previews and validation build the very same request here without running
anything (:func:`child_request`) and load it as a stack (:func:`expand`), so
a preview shows, and validation checks, the child the worker would make.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Collection, Mapping
from typing import Any, Final, Protocol, TypeGuard

from libs.resources.base import ResourceType
from libs.resources.nested import NestedStackType, TemplateResource
from libs.resources.properties import UNKNOWN, PropSchema, PropType, validate_properties
from libs.resources.registry import Registry
from libs.resources.resource_group import MemberStack
from libs.resources.steps import Nest, StepContext
from libs.template import errors
from libs.template.environment import Environment
from libs.template.functions.base import dependencies
from libs.template.functions.base import resolve as base_resolve
from libs.template.limits import Limits
from libs.template.request import DEFAULT_LIMITS, LoadedStack, StackRequest, load, parameter_schemas
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition
from libs.template.template import Template

NESTED_LIMITS: Final = DEFAULT_LIMITS.nested()

# Heat's path item for a nested stack whose template is made by its resource (a group's).
MADE_TEMPLATE: Final = "nested_stack"

_PROPERTY_TYPES: Final[dict[str, PropType]] = {
    "string": "string", "number": "number", "comma_delimited_list": "list", "json": "map",
    "boolean": "boolean",
}


class StackParts(Protocol):
    """What a stack's desired state holds (a stored one, or one loaded from a request)."""

    @property
    def template(self) -> Template: ...

    @property
    def environment(self) -> Environment: ...

    @property
    def definition(self) -> StackDefinition: ...


# ---- provider templates -------------------------------------------------------------------------

def provider_schema(template: Template, param_defaults: Mapping[str, Any]) -> dict[str, PropSchema]:
    """A provider template resource's properties: one per parameter of its template.

    A parameter with no default (neither in the template nor in the
    environment's ``parameter_defaults``) is a required property; the
    parameter's constraints check the property's value, where they fit its type.
    """
    schema: dict[str, PropSchema] = {}
    for name, param in parameter_schemas(template).items():
        kind = _PROPERTY_TYPES.get(param.type, "map")
        fitting = tuple(c for c in param.constraints if _fits(kind, c))
        schema[name] = PropSchema(
            kind, param.description if isinstance(param.description, str) else None,
            required=param.default is None and name not in param_defaults, constraints=fitting,
            update_allowed=True, allow_conversion=kind in ("map", "list"))
    return schema


def _fits(kind: PropType, constraint: Any) -> bool:
    try:
        PropSchema(kind, constraints=(constraint,))
    except errors.TemplateError:
        return False
    return True


def provider_parameters(schema: Mapping[str, PropSchema], properties: Mapping[str, Any]) -> dict[str, Any]:
    """The nested stack's parameter values from the resource's properties (Heat's ``child_params``).

    Lists become comma-delimited text (a list of maps as ``.member.<i>.<key>=<value>``
    items), unset properties are left out.
    """
    params: dict[str, Any] = {}
    for name, value in properties.items():
        if value is None:
            continue
        prop = schema.get(name)
        params[name] = _delimited(value) if prop is not None and prop.type == "list" and isinstance(
            value, list) else value
    return params


def _delimited(value: list[Any]) -> str:
    if value and isinstance(value[0], Mapping):
        return ",".join(f".member.{index}.{key}={item}"
                        for index, member in enumerate(value) for key, item in member.items())
    return ",".join("" if item is None else str(item) for item in value)


def _provider_template(parent: StackParts, plugin: TemplateResource) -> Template | None:
    """The provider template, or None when it is not there to read.

    A URL (Ember fetches none) or text that does not parse: the nested stack
    fails to load with Heat's message where it is loaded.
    """
    text = parent.template.files.get(plugin.template_key)
    if text is None:
        return None
    try:
        return Template.load(text, parent.template.files, max_size=NESTED_LIMITS.max_template_size)
    except errors.TemplateError:
        return None


# ---- the child's request --------------------------------------------------------------------------

def provided(plugin: ResourceType, name: str, request: Nest, parent: StackParts) -> Nest:
    """``request`` with what only the parent's desired state has.

    A provider template's text is one of the parent's files, and its
    properties are the child's parameters, carried in the child environment
    as Heat does; groups pass their files and environment down too.
    """
    if (not isinstance(plugin, NestedStackType) or not plugin.inherits_environment
            or request.operation not in ("create", "update")):
        return request
    files = dict(parent.template.files)
    if not isinstance(plugin, TemplateResource):
        env = parent.environment.child_environment(name).to_dict()
        return dataclasses.replace(request, files=files, environment=env, parameters={}, facade=None)
    template = _provider_template(parent, plugin)
    params = dict(request.parameters)
    try:
        if template is not None:
            params = provider_parameters(provider_schema(template, parent.environment.parameter_defaults),
                                         params)
    except errors.TemplateError:
        pass  # parameters that do not parse: the nested stack fails to load with Heat's message
    resolved = parent.environment.registry.resolve(name, plugin.resource_type_name)
    env = parent.environment.child_environment(name, params, remove=resolved).to_dict()
    definition = parent.definition.resources[name]
    resolver = StackResolver(parent.definition, StaticResourceData())
    facade = {"metadata": base_resolve(definition.metadata, resolver) or {},
              "deletion_policy": definition.deletion_policy,
              "update_policy": resolver.update_policy(name)}
    return dataclasses.replace(request, template=files.get(plugin.template_key), files=files,
                               environment=env, parameters={}, facade=facade)


def expands(plugin: ResourceType | None) -> TypeGuard[NestedStackType]:
    """Whether the type's nested stack is known before it exists (provider templates and groups)."""
    return isinstance(plugin, NestedStackType) and plugin.inherits_environment


def child_request(plugin: ResourceType, parent: StackParts, name: str, properties: Mapping[str, Any], *,
                  stack_name: str, one_member: bool = False, rng: random.Random | None = None,
                  data: Mapping[str, str] | None = None, old_properties: Mapping[str, Any] | None = None
                  ) -> Nest | None:
    """What the worker would ask for to make (or update) resource ``name``'s nested stack now, or None.

    ``properties`` are the resource's validated properties; ``data`` and
    ``old_properties`` those of the resource as it is, when it exists.
    ``one_member`` sizes a group to one member. ``OS::Heat::Stack`` gives
    None: Heat's is a remote stack, neither previewed nor validated as nested.
    A resource whose properties make no child (they fail their own validation)
    gives None too.
    """
    if not expands(plugin):
        return None
    sized = plugin.one_member(properties) if one_member and isinstance(plugin, MemberStack) else properties
    ctx = StepContext(stack_id="None", stack_name=stack_name, resource_name=name, physical_id=None,
                      properties=sized, old_properties=old_properties, data=dict(data or {}), now=0.0,
                      started_at=0.0, short_id="", rng=rng or random.Random())
    try:
        request = plugin.child_request(ctx)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None  # properties the resource's own validation refuses
    return provided(plugin, name, request, parent)


# ---- nested stacks, loaded -----------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class NestedStack:
    """A nesting resource's child as it would be made: named ``<parent>-<resource>``, as Heat's preview."""

    resource: str
    name: str
    # Heat's path item for errors inside it: ``<resource><<template file>>``.
    where: str
    stack: LoadedStack


@dataclasses.dataclass(frozen=True)
class Expansion:
    """What expanding a stack's nesting resources needs besides the stack."""

    registry: Registry
    project_id: str
    limits: Limits = NESTED_LIMITS
    one_member: bool = False
    rng: random.Random = dataclasses.field(default_factory=random.Random, compare=False)

    @property
    def builtin_types(self) -> Collection[str]:
        return self.registry.types()


def plugin_of(registry: Registry, stack: StackParts, name: str) -> ResourceType | None:
    """The plugin behind resource ``name``; None for a type nothing implements."""
    try:
        return registry.implementing(stack.definition.resources[name].type, resource_name=name,
                                     environment=stack.environment.registry)
    except KeyError:
        return None


def typed_properties(plugin: ResourceType, stack: StackParts, name: str,
                     resolver: StackResolver) -> dict[str, Any]:
    """The resource's properties as its action would get them, as far as they are known now.

    A provider template's are typed by its parameters; values that cannot be
    converted yet are kept as given.
    """
    values = resolver.properties(name)
    if isinstance(plugin, TemplateResource):
        template = _provider_template(stack, plugin)
        if template is None:
            return dict(values or {})
        schema = provider_schema(template, stack.environment.parameter_defaults)
        typed = validate_properties(schema, values, resource_name=name, strict_values=False)
        return {k: v for k, v in typed.items() if k in (values or {})}
    return plugin.validate(values, resource_name=name, strict_values=False)


def where(name: str, plugin: ResourceType) -> str:
    """Heat's path item for a nested stack: the resource and where its template came from."""
    return f"{name}<{plugin.template_key if isinstance(plugin, TemplateResource) else MADE_TEMPLATE}>"


def expand(stack: StackParts, name: str, plugin: ResourceType, properties: Mapping[str, Any], *,
           stack_name: str, how: Expansion, depth: int = 0, data: Mapping[str, str] | None = None,
           old_properties: Mapping[str, Any] | None = None) -> NestedStack | None:
    """Resource ``name``'s nested stack, loaded and checked as Heat loads a nested stack; None if it has none.

    ``depth`` is the parent's nesting depth. Failures are raised as they are
    (see :func:`inside` for the path Heat puts in front).
    """
    request = child_request(plugin, stack, name, properties, stack_name=stack_name,
                            one_member=how.one_member, rng=how.rng, data=data, old_properties=old_properties)
    if request is None or request.template is None:
        return None
    how.limits.check_nested_depth(depth)
    loaded = load(StackRequest(template=request.template, files=request.files,
                               environment=request.environment, parameters=request.parameters),
                  stack_name=f"{stack_name}-{name}", stack_id="None", project_id=how.project_id,
                  limits=how.limits, builtin_types=how.builtin_types, validate_values=False,
                  facade=request.facade)
    return NestedStack(resource=name, name=f"{stack_name}-{name}", where=where(name, plugin), stack=loaded)


def inside(where: str, exc: errors.TemplateError) -> errors.StackValidationFailed:
    """A failure inside a nested stack as Heat reports it: the nesting resource's path in front."""
    if isinstance(exc, errors.StackValidationFailed):
        return exc.prefixed("resources", where)
    return errors.StackValidationFailed(str(exc), ("resources", where), error=exc.error_type)


# ---- validation -----------------------------------------------------------------------------------

def _known(stack: StackParts, name: str, resolver: StackResolver) -> Any:
    """The resource's properties, those that read another resource UNKNOWN (it does not exist yet)."""
    resolved = resolver.properties(name)
    raw = stack.definition.resources[name].properties
    if not isinstance(raw, Mapping) or not isinstance(resolved, Mapping):
        return resolved
    return {key: UNKNOWN if key in raw and next(dependencies(raw[key]), None) is not None else value
            for key, value in resolved.items()}


def check(stack: StackParts, how: Expansion, *, stack_name: str, depth: int = 0) -> None:
    """Heat's validation of a stack's nested stacks, before anything is stored; raises StackValidationFailed.

    In the stack itself (``depth`` 0) a provider template resource's
    properties are checked against its template's parameters, values
    included (those read from other resources are not known yet and pass).
    Each nested stack is then loaded as it would be made (a group with one
    member) and checked as Heat checks a nested stack: its types, parameters
    and template, and only the names of its resources' properties; and so on
    down, a failure carrying the path of the nesting resources.
    """
    resolver = StackResolver(stack.definition, StaticResourceData())
    for name in stack.definition.resources:
        plugin = plugin_of(how.registry, stack, name)
        if plugin is None:
            continue
        strict = depth == 0
        if isinstance(plugin, TemplateResource):
            template = _provider_template(stack, plugin)
            if template is not None:
                schema = provider_schema(template, stack.environment.parameter_defaults)
                values = _known(stack, name, resolver) if strict else resolver.properties(name)
                validate_properties(schema, values, resource_name=name, strict_values=strict)
        elif not strict:
            plugin.validate(resolver.properties(name), resource_name=name, strict_values=False)
        if not expands(plugin):
            continue
        properties = typed_properties(plugin, stack, name, resolver)
        if isinstance(plugin, MemberStack) and not plugin.has_members(properties):
            continue  # Heat validates no member of an empty group
        sized = dataclasses.replace(how, one_member=True)
        request = child_request(plugin, stack, name, properties, stack_name=stack_name, one_member=True,
                                rng=how.rng)
        if request is not None and plugin.checks_member_types:
            # A group resolves its members' types itself: no nested path in front.
            members = request.template.get("resources") if isinstance(request.template, Mapping) else None
            types = stack.environment.registry.with_builtin_types(how.builtin_types)
            for member, definition in (members or {}).items():
                types.check_type(
                    member, definition.get("type") if isinstance(definition, Mapping) else None)
        try:
            nested = expand(stack, name, plugin, properties, stack_name=stack_name, how=sized, depth=depth)
            if nested is not None:
                check(nested.stack, how, stack_name=nested.name, depth=depth + 1)
        except errors.TemplateError as exc:
            raise inside(where(name, plugin), exc) from None
