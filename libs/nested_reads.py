"""What a nesting resource reads of its nested stack's rows, the I/O of :class:`NestedReads`.

A group reads its members' rows (:func:`libs.db.resources.nested_read`). A member
that is itself a group keeps only what its own template (the outer group's member
template, which reads nothing) reads of it, so a read through the outer group of
the inner group's own attribute (``get_attr: [outer, resource.0.refs]``) finds no
answer kept: it is answered here from the inner group's nested stack rows, read
the same way, to any depth. Only the members read, and only what is read of them.
"""

from __future__ import annotations

import uuid
from typing import Any

from libs.db import Conn, resources
from libs.resources.nested import read_data, unanswered
from libs.resources.registry import Registry
from libs.resources.resource_group import MemberStack
from libs.resources.steps import NestedReads
from libs.template import attribute_store
from libs.template.attribute_store import AttributeFailed

Read = dict[str, tuple[Any, dict[str, Any]]]


async def nested_read(conn: Conn, registry: Registry, stack_id: uuid.UUID, reads: NestedReads) -> Read:
    """name -> (reference, attributes) of the rows of ``stack_id`` that ``reads`` asks for, each
    with the answers to ``reads.member_reads`` that a member group does not keep itself."""
    read = await resources.nested_read(conn, stack_id, reads.names, every=reads.every,
                                       attributes=reads.attributes)
    gaps = unanswered(read, reads)
    if not gaps:
        return read
    rows = await resources.current_by_names(conn, stack_id, gaps)
    for name, wanted in gaps.items():
        row = rows.get(name)
        plugin = registry.get(row.type) if row is not None and row.type in registry else None
        if row is None or not isinstance(plugin, MemberStack) or row.physical_id is None:
            continue  # not a group: what it does not keep, it does not have
        inner = plugin.nested_reads(wanted)
        inner_read = await nested_read(conn, registry, uuid.UUID(row.physical_id), inner) if inner else {}
        data = {**row.data, **read_data(inner_read, every=inner.every, whole=inner.whole)}
        answered: dict[str, Any] = {}
        for attribute, *path in wanted:
            try:
                value = plugin.read(attribute, path, row.physical_id, data, row.properties or {},
                                    resource_name=name)
            except AttributeFailed as exc:
                value = attribute_store.failure(str(exc))
            answered[attribute_store.read_key(attribute, path)] = value
        reference, kept = read[name]
        read[name] = (reference, attribute_store.with_reads(kept, answered))
    return read
