"""A resource's data changed outside any step of it: its stored attributes, and its stack's outputs,
follow at once.

Two things change a finished resource so: a nested stack that changed on its own (a group scaled)
and a deployment whose outputs a ``PUT /software_deployments/<id>`` replaced (Heat reads a
deployment's attributes from its row each time). Both write here, in the caller's transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any

import orjson

from libs import nested_reads
from libs.db import Conn, resources, stacks, templates
from libs.engine import desired
from libs.engine.status import Status
from libs.resources.base import ResourceType
from libs.resources.nested import NestedStackType, read_data
from libs.resources.registry import Registry

# name -> (reference, attributes) of a stack's current rows: what its outputs are resolved over.
Current = dict[str, tuple[Any, Mapping[str, Any]]]


async def current(conn: Conn, stack_id: uuid.UUID, names: Collection[str]) -> Current:
    """The stack's current rows ``names`` as outputs are resolved over them."""
    return {n: (r.known_reference(), r.attributes)
            for n, r in (await resources.current_by_names(conn, stack_id, names)).items()}


async def outputs_now(conn: Conn, stack_id: uuid.UUID, want: desired.Desired) -> list[dict[str, Any]]:
    """The stack's outputs (of its template ``want``) over its rows as they are."""
    return desired.outputs_over(want.definition, await current(
        conn, stack_id, desired.output_resources(want.definition)))


async def stack_desired(conn: Conn, stack: stacks.StackRow) -> desired.Desired | None:
    """The stack's current template, loaded (None: it has none)."""
    if stack.template_id is None:
        return None
    raw = await templates.get(conn, stack.template_id)
    return desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                        stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)


async def refresh(conn: Conn, stack: stacks.StackRow | None, want: desired.Desired | None, *,
                  row: resources.ResourceRow, plugin: ResourceType, data: Mapping[str, Any]
                  ) -> list[dict[str, Any]] | None:
    """Write ``data`` and the attributes it gives to ``row``, then the stack's outputs (of its
    template ``want``) over them, unless a traversal runs (its end writes them). The outputs
    written; None when none were (or the row changed meanwhile)."""
    reads = want.definition.attribute_reads.get(row.name, frozenset()) if want is not None else frozenset()
    attributes = plugin.stored_attributes(reads, row.physical_id, data, row.properties or {},
                                          resource_name=row.name)
    if await resources.write(conn, row, data=plugin.kept_data(data), attributes=attributes) is None:
        return None
    if stack is None or want is None or stack.status == Status.IN_PROGRESS:
        return None
    outputs = await outputs_now(conn, stack.id, want)
    await stacks.set_outputs(conn, stack.id, outputs)
    return outputs


async def refresh_parent(conn: Conn, child: stacks.StackRow, outputs: list[dict[str, Any]],
                         registry: Registry) -> None:
    """A nested stack's outputs changed on its own (a group scaled, a member's deployment was
    PUT): its parent resource, its parent's outputs, and so on up, follow.

    When the parent resource's own step is under way, that step records the
    outcome itself; this is for changes no parent traversal drives.
    """
    if child.parent_id is None:
        return
    row = next((r for r in await resources.for_stack(conn, child.parent_id)
                if r.is_current and r.physical_id == str(child.id)), None)
    if row is None or row.status == Status.IN_PROGRESS:
        return
    try:
        plugin = registry.get(row.type)
    except KeyError:
        return  # a provider template: its attributes are its outputs, refreshed by its next step
    parent = await stacks.get(conn, child.parent_id)
    if parent is None:
        return
    data = {**row.data, "outputs": orjson.dumps({o["output_key"]: o.get("output_value")
                                                  for o in outputs}).decode()}
    want = await stack_desired(conn, parent)
    if isinstance(plugin, NestedStackType) and want is not None:
        # What the parent reads through the group of its members, read again from their rows.
        definition = want.definition
        reads = plugin.nested_reads(definition.attribute_reads.get(row.name, frozenset()),
                                    whole=row.name in definition.whole_reads)
        read = (await nested_reads.nested_read(conn, registry, child.id, reads)) if reads else {}
        data.update(read_data(read, every=reads.every, whole=reads.whole))
    written = await refresh(conn, parent, want, row=row, plugin=plugin, data=data)
    if written is not None:
        await refresh_parent(conn, parent, written, registry)
