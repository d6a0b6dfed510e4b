"""Updates the planner settles without resolving each resource again: what is known to be unchanged.

Both shortcuts give the answer :func:`libs.engine.unchanged.unchanged` would give, and
record it on the rows as settling them one by one does (``version``; ``updated_at`` stays, as
Heat's ``updated_time`` of a resource left alone), in one statement, or not at all when the
stack's last traversal finished and the template is the one it has: a group's nested stack
of 10^5 members updated with the template it has, or with one member replaced, is not
resolved and written member by member.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection, Iterable, Sequence

from libs.db import Conn, breakpoints, resources, stacks, templates, traversals
from libs.db import settling as settled_rows
from libs.engine import unchanged
from libs.resources.implicit import RULED_TYPES
from libs.resources.registry import Registry
from libs.template.environment import Environment
from libs.template.registry import ResourceRegistry


async def kept_converged(conn: Conn, stack: stacks.StackRow, registry: Registry) -> bool:
    """Whether this update of the stack leaves every resource alone, known without reading its
    template or its rows: the desired state is the one the stack last completed (a group kept
    its nested stack's template), every row converged with it and none reads another (so every
    property resolves as it did), no type is a nested stack (which every update reaches), and
    nothing could pause (hooks, breakpoints) or be answered again (the stack has no outputs).
    Then each row is fenced as settling it would, in one statement, unless nothing of the last
    traversal can still be under way.
    """
    template_id = stack.template_id
    if template_id is None or template_id != stack.prev_template_id or stack.outputs != []:
        return False
    summary = await settled_rows.converged(conn, stack.id, template_id)
    if not summary.whole:
        return False
    env = Environment.from_dict((await templates.environments(conn, [template_id]))[template_id]).registry
    if env.has_resource_settings() or await breakpoints.reaching(conn, stack.id):
        return False
    for type_name in summary.types:
        try:
            if registry.implementing(type_name, resource_name="", environment=env).always_updates:
                return False
        except KeyError:
            return False
    previous = await traversals.get(conn, stack.current_traversal) if stack.current_traversal else None
    if previous is not None and previous.finished_at is not None:
        return True  # no step of it is under way: there is nothing to fence, nothing to write
    # A step of an older traversal that wrote a row meanwhile: planned the usual way instead.
    return await settled_rows.touch_converged(conn, stack.id, template_id) == summary.rows


@dataclasses.dataclass(frozen=True)
class Alike:
    """Rows whose definitions are, as written, those they converged with in one earlier desired
    state, and require nothing (:func:`libs.engine.unchanged.same_definitions`)."""

    old_template_id: uuid.UUID
    names: frozenset[str]


async def written_alike(conn: Conn, new: templates.RawTemplate, rows: Sequence[resources.Outlined], *,
                        exclude: Collection[str], env: ResourceRegistry, registry: Registry) -> Alike | None:
    """The rows an update may leave alone without parsing their definitions, or None.

    Only where every current row left to compare converged with one earlier desired state
    with the same files, environment and facade as ``new`` (a group's members after a resize
    or a removal); anything else is left to the caller's comparison. Nothing is written:
    what others read is known only once the rest is parsed (:func:`settle_kept`).
    """
    unmade = resources.unmade_replacements(rows)
    current = {row.name: row for row in rows if row.is_current and row.id not in unmade}
    old_ids = {row.template_id for row in rows
               if row.is_current and row.template_id is not None and row.template_id != new.id}
    if len(old_ids) != 1:
        return None
    old_id = old_ids.pop()
    old = await templates.get(conn, old_id)
    if (old.files, old.environment, old.facade) != (new.files, new.environment, new.facade):
        return None
    types: dict[str, bool] = {}

    def always_updates(name: str, type_name: str) -> bool:
        # With no per-resource entries, a type means one plugin for every name.
        key = f"{name}\0{type_name}" if env.has_resource_settings() else type_name
        if key not in types:
            try:
                plugin = registry.implementing(type_name, resource_name=name, environment=env)
                types[key] = plugin.always_updates
            except KeyError:
                types[key] = True  # no plugin: its node fails it, with the reason
        return types[key]

    names = unchanged.same_definitions(old.template, new.template, current, old_template_id=old_id,
                                       exclude=exclude, always_updates=always_updates,
                                       ruled_types=RULED_TYPES)
    return Alike(old_id, frozenset(names)) if names else None


async def settle_alike(conn: Conn, stack_id: uuid.UUID, alike: Alike, rows: Iterable[resources.Outlined], *,
                       held: Collection[str], read: Collection[str], template_id: uuid.UUID
                       ) -> dict[str, int]:
    """The new desired state on the rows ``alike`` still as they were, in one statement, but for
    what may pause (``held``), what others ``read`` and what required another when it was made:
    those are compared the usual way. Name -> id of each row settled."""
    reading = {r.name for r in rows if r.is_current and r.requires}
    names = alike.names - set(held) - reading - set(read)
    if not names:
        return {}
    return await settled_rows.settle_kept(conn, stack_id, list(names), old_template_id=alike.old_template_id,
                                          template_id=template_id)
