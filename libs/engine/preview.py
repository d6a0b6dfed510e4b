"""Preview of an update: which resources would be added, deleted, replaced, updated or kept.

The same decision the worker makes (:func:`libs.engine.step.decide`), asked of
every resource at once with the data the stack has now, and nothing written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from libs.engine.step import RowState, decide
from libs.template.attribute_store import AttributeFailed
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition


@dataclasses.dataclass(frozen=True)
class Changes:
    added: list[str] = dataclasses.field(default_factory=list)
    deleted: list[str] = dataclasses.field(default_factory=list)
    replaced: list[str] = dataclasses.field(default_factory=list)
    updated: list[str] = dataclasses.field(default_factory=list)
    unchanged: list[str] = dataclasses.field(default_factory=list)


def changes(current: Mapping[str, RowState], new_types: Mapping[str, str],
            new_properties: Callable[[str], Mapping[str, Any]],
            needs_replace: Callable[[str], Callable[[Mapping[str, Any], Mapping[str, Any]], bool]],
            never_updates: Callable[[str], bool]) -> Changes:
    out = Changes()
    for name in new_types:
        row = current.get(name)
        if row is None or row.action == "INIT":
            out.added.append(name)
            continue
        try:
            properties = new_properties(name)
        except AttributeFailed:  # it reads an attribute that failed: an update would start there
            out.updated.append(name)
            continue
        verb = decide("u", "UPDATE", "preview", "preview", row, in_template=True,
                      new_type=new_types[name], new_properties=properties,
                      needs_replace=needs_replace(name), never_updates=never_updates(name)).verb
        {"replace": out.replaced, "update": out.updated}.get(verb, out.unchanged).append(name)
    out.deleted.extend(n for n in current if n not in new_types)
    return out


@dataclasses.dataclass(frozen=True)
class PlannedResource:
    name: str
    type: str
    properties: Mapping[str, Any]
    requires: tuple[str, ...]


def create_preview(definition: StackDefinition) -> list[PlannedResource]:
    """What a create would make, in creation order, properties resolved as far as they can be.

    Nothing exists yet: references and attributes of other resources resolve to
    None, as in Heat's preview.
    """
    resolver = StackResolver(definition, StaticResourceData())
    order = definition.graph().topological_order()
    return [PlannedResource(name, definition.resources[name].type, resolver.properties(name),
                            tuple(sorted(definition.required(name)))) for name in order]
