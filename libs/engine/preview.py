"""Previews: what a create would make, and what an update would add, delete, replace or keep.

A create preview plans every resource, nesting ones with the nested stack the
worker would make for them (:mod:`libs.resources.nesting`). An update preview
asks the worker's own decision (:func:`libs.engine.step.decide`) of every
resource at once with the data the stack has now. Nothing is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from libs.engine.keys import NodeKind
from libs.engine.status import Action
from libs.engine.step import RowState, Verb, decide
from libs.resources import nesting
from libs.resources.attributes import SHOW
from libs.resources.base import ResourceType
from libs.resources.nesting import StackParts
from libs.resources.registry import Registry
from libs.template import errors
from libs.template.attribute_store import AttributeFailed
from libs.template.functions.base import resolve as base_resolve
from libs.template.request import LoadedStack
from libs.template.resolution import StackResolver, StaticResourceData


@dataclasses.dataclass(frozen=True)
class Changes:
    added: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)
    replaced: list[str] = dataclasses.field(default_factory=list)
    updated: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)


def changes(current: Mapping[str, RowState], new_types: Mapping[str, str],
            new_properties: Callable[[str], Mapping[str, Any]],
            needs_replace: Callable[[str], Callable[[Mapping[str, Any], Mapping[str, Any]], bool]], *,
            never_updates: Callable[[str], bool], always_updates: Callable[[str], bool],
            same_implementation: Callable[[str], bool | None] = lambda _: None,
            external_id: Callable[[str], str | None] = lambda _: None) -> Changes:
    """The worker's decision for every resource; see :func:`~libs.engine.step.decide` for the rules."""
    out = Changes()
    for name in new_types:
        row = current.get(name)
        if row is None or row.action == Action.INIT:
            out.added.append(name)
            continue
        try:
            properties = new_properties(name)
        except AttributeFailed:  # it reads an attribute that failed: an update would start there
            out.updated.append(name)
            continue
        verb = decide(NodeKind.UPDATE, Action.UPDATE, "preview", "preview", row, in_template=True,
                      new_type=new_types[name], new_properties=properties,
                      needs_replace=needs_replace(name), never_updates=never_updates(name),
                      always_updates=always_updates(name), same_implementation=same_implementation(name),
                      external_id=external_id(name)).verb
        {Verb.REPLACE: out.replaced, Verb.UPDATE: out.updated}.get(verb, out.unchanged).append(name)
    out.deleted.extend(n for n in current if n not in new_types)
    return out


@dataclasses.dataclass(frozen=True)
class PlannedResource:
    """A resource as a create would make it, in Heat's preview detail.

    ``properties`` holds every property of the type's schema (defaults filled
    in), ``attributes`` every attribute key, resolved as far as they can be
    before the resource exists. A nesting resource has its ``nested`` stack.
    """

    name: str
    type: str
    properties: Mapping[str, Any]
    attributes: Mapping[str, Any]
    requires: tuple[str, ...]
    required_by: tuple[str, ...]
    description: str
    metadata: Any
    nested: PlannedStack | None = None


@dataclasses.dataclass(frozen=True)
class PlannedStack:
    """A stack a create would make: named ``<parent>-<resource>`` when nested, as in Heat's preview."""

    name: str
    parent_resource: str | None
    resources: tuple[PlannedResource, ...]

    def flattened(self) -> Iterator[tuple[PlannedStack, PlannedResource]]:
        """Every resource, nesting ones too, each followed by those of its nested stack."""
        for resource in self.resources:
            yield self, resource
            if resource.nested is not None:
                yield from resource.nested.flattened()


def preview_data(stack: StackParts, registry: Registry) -> StaticResourceData:
    """Resource data before anything exists: each reference is what the type gives without a
    physical resource (its name, mostly), every attribute None."""
    refs: dict[str, Any] = {}
    for name in stack.definition.resources:
        plugin = nesting.plugin_of(registry, stack, name)
        refs[name] = plugin.reference_id(None, {}, resource_name=name) if plugin is not None else name
    return StaticResourceData(refs)


def _attributes(plugin: ResourceType | None, properties: Mapping[str, Any]) -> dict[str, Any]:
    if plugin is None:
        return {}
    shown: dict[str, Any] = {}
    for name in plugin.attributes_schema:
        if name == SHOW:
            continue  # nothing to show before the resource exists, and Heat then leaves it out
        try:
            shown[name] = plugin.attribute(name, None, {}, properties)
        except Exception:  # as Heat's preview, an attribute that cannot resolve yet is null
            shown[name] = None
    return shown


def planned_resources(stack: StackParts, registry: Registry, data: StaticResourceData | None = None
                      ) -> dict[str, PlannedResource]:
    """Each resource of ``stack`` as a create would make it (no nested stacks), in creation order."""
    data = data if data is not None else preview_data(stack, registry)
    definition = stack.definition
    resolver = StackResolver(definition, data)
    order = definition.graph().topological_order()
    requires = {name: tuple(sorted(definition.required(name))) for name in order}
    needed_by: dict[str, list[str]] = {}
    for name in order:
        for other in requires[name]:
            needed_by.setdefault(other, []).append(name)
    planned: dict[str, PlannedResource] = {}
    for name in order:
        defn = definition.resources[name]
        plugin = nesting.plugin_of(registry, stack, name)
        properties = _shown_properties(plugin, stack, name, resolver)
        planned[name] = PlannedResource(
            name=name, type=defn.type, properties=properties, attributes=_attributes(plugin, properties),
            requires=requires[name], required_by=tuple(sorted(needed_by.get(name, []))),
            description=defn.description or "", metadata=_metadata(defn.metadata, resolver))
    return planned


def _metadata(snippet: Any, resolver: StackResolver) -> Any:
    try:
        return base_resolve(snippet, resolver) or {}
    except errors.TemplateError:
        raise
    except Exception:  # Heat's preview answers its bare 400 to metadata whose functions fail
        raise errors.MalformedRequest() from None


def _shown_properties(plugin: ResourceType | None, stack: StackParts, name: str,
                      resolver: StackResolver) -> dict[str, Any]:
    """Typed as the action would get them where they can be; as given where they cannot."""
    try:
        if plugin is not None:
            return nesting.typed_properties(plugin, stack, name, resolver)
    except errors.TemplateError:
        pass
    except AttributeFailed:
        return {}  # it reads an attribute that failed: nothing to show before it runs
    try:
        return dict(resolver.properties(name) or {})
    except AttributeFailed:
        return {}


def create_preview(stack: LoadedStack, how: nesting.Expansion, *, stack_name: str,
                   parent_resource: str | None = None, depth: int = 0) -> PlannedStack:
    """What a create would make, nested stacks included, in creation order.

    Nothing exists yet: references are what each type gives before it has a
    physical resource and attributes are None, as in Heat's preview.
    """
    resources: list[PlannedResource] = []
    for name, planned in planned_resources(stack, how.registry).items():
        plugin = nesting.plugin_of(how.registry, stack, name)
        nested = None if plugin is None else nested_stack(stack, name, plugin, planned.properties,
                                                          stack_name=stack_name, how=how, depth=depth)
        if nested is None:
            resources.append(planned)
            continue
        inner = create_preview(nested.stack, how, stack_name=nested.name, parent_resource=name,
                               depth=depth + 1)
        resources.append(dataclasses.replace(planned, nested=inner))
    return PlannedStack(stack_name, parent_resource, tuple(resources))


def nested_stack(stack: StackParts, name: str, plugin: ResourceType, properties: Mapping[str, Any], *,
                 stack_name: str, how: nesting.Expansion, depth: int,
                 data: Mapping[str, str] | None = None, old_properties: Mapping[str, Any] | None = None
                 ) -> nesting.NestedStack | None:
    """:func:`libs.resources.nesting.expand`, a failure inside reported with the resource's path."""
    try:
        return nesting.expand(stack, name, plugin, properties, stack_name=stack_name, how=how, depth=depth,
                              data=data, old_properties=old_properties)
    except errors.TemplateError as exc:
        raise nesting.inside(nesting.where(name, plugin), exc) from None
