"""Heat's update preview: what an update would add, delete, replace, update or leave, nothing written.

Each resource gets the decision the worker would make now
(:func:`libs.engine.preview.changes`). With ``show_nested`` the preview goes
down into nested stacks as Heat's does: a nesting resource that is updated
compares its nested stack as it is with the one the update would give it (and
so on down); one that is deleted or replaced lists everything under it as
deleted, and one that is added or replaced everything its new nested stack
would hold as added. A resource that exists is shown as it is
(:class:`Existing`), one of the new template as it would be made
(:class:`Planned`), as Heat shows them.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from libs import operations
from libs.db import Conn, resources, stacks, templates
from libs.db.pool import Connections
from libs.engine import preview
from libs.evaluation_pool import INLINE, Evaluator
from libs.resources import nesting
from libs.resources.base import ResourceType
from libs.resources.registry import Registry
from libs.template import request
from libs.template.environment import Environment
from libs.template.limits import Limits
from libs.template.registry import ResourceRegistry
from libs.template.request import LoadedStack
from libs.template.resolution import StackResolver, StaticResourceData

KEYS = ("added", "deleted", "replaced", "updated", "unchanged")


@dataclasses.dataclass(frozen=True)
class Existing:
    """A resource as it is now; ``nested`` is the stack it nests, if any."""

    stack: stacks.StackRow
    row: resources.ResourceRow
    needed_by: list[str]
    parent_resource: str | None
    nested: stacks.StackRow | None


@dataclasses.dataclass(frozen=True)
class Planned:
    """A resource as the new template would make it, in the stack named and identified so."""

    resource: preview.PlannedResource
    stack_name: str
    stack_id: str
    parent_resource: str | None


Entry = Existing | Planned
Changes = dict[str, list[Entry]]


async def preview_update(pool: Connections, stack: stacks.StackRow, *, stack_request: request.StackRequest,
                         registry: Registry, existing: bool = False, clear_parameters: Sequence[str] = (),
                         show_nested: bool = False, evaluation: Evaluator = INLINE,
                         limits: Limits = request.DEFAULT_LIMITS) -> Changes:
    """Heat's ``PUT .../preview`` (``existing``: its PATCH) of ``stack``.

    What is stored is read first (:class:`Stored`); the request is then checked
    as an update is and compared with it in ``evaluation``'s processes, under
    their deadline: the comparison resolves the new properties over the live
    resources' attributes, which the check alone never sees.
    """
    checking = operations.Checking(project=stack.project, stack_name=stack.name, stack_id=str(stack.id),
                                   limits=limits, builtin_types=registry.types(), registry=registry,
                                   top=stack.parent_id is None)
    desired_now = await operations.stored_of(pool, stack)
    async with pool.acquire() as conn:
        stored = await Stored.read(conn, stack, nested=show_nested)
    return await evaluation.run(compared, stack_request, desired_now, checking, stack, stored,
                                existing=existing, clear_parameters=clear_parameters, show_nested=show_nested)


@dataclasses.dataclass(frozen=True)
class Stored:
    """What the preview reads of a stack and (with ``nested``) the stacks under it: their current
    rows, their live children, and the environments their rows were made with."""

    rows: dict[uuid.UUID, list[resources.ResourceRow]]
    children: dict[uuid.UUID, dict[uuid.UUID, stacks.StackRow]]
    environments: dict[uuid.UUID, dict[str, Any]]

    @classmethod
    async def read(cls, conn: Conn, stack: stacks.StackRow, *, nested: bool) -> Stored:
        rows: dict[uuid.UUID, list[resources.ResourceRow]] = {}
        children: dict[uuid.UUID, dict[uuid.UUID, stacks.StackRow]] = {}
        pending = [stack.id]
        while pending:
            stack_id = pending.pop()
            rows[stack_id] = await resources.for_stack(conn, stack_id)
            found = await stacks.get_many(conn, list(await stacks.children(conn, stack_id)))
            children[stack_id] = {k: v for k, v in found.items() if v.deleted_at is None}
            if nested:
                pending.extend(children[stack_id])
        ids = list({r.template_id for listed in rows.values() for r in listed if r.template_id is not None})
        return cls(rows, children, await templates.environments(conn, ids))


def compared(stack_request: request.StackRequest, desired_now: templates.RawTemplate | None,
             checking: operations.Checking, stack: stacks.StackRow, stored: Stored, *, existing: bool,
             clear_parameters: Sequence[str], show_nested: bool) -> Changes:
    """The update preview's changes (pure: it runs in the evaluation pool)."""
    checked = operations.checked_update(stack_request, desired_now, checking, existing=existing,
                                        clear_parameters=clear_parameters)
    assert checking.registry is not None
    loaded = request.load(request.StackRequest(template=checked.template, files=checked.files,
                                               environment=checked.environment),
                          stack_name=stack.name, stack_id=str(stack.id), project_id=stack.project,
                          limits=checking.limits, builtin_types=checking.registry.types(), updating=True)
    how = nesting.Expansion(checking.registry, stack.project)
    out: Changes = {key: [] for key in KEYS}
    _compare(stored, stack, loaded, out, how, new_name=stack.name, new_id=str(stack.id), parent_resource=None,
             show_nested=show_nested, depth=0)
    return out


class _Current:
    """One existing stack's current resources, and what the preview shows of each."""

    def __init__(self, stack: stacks.StackRow, rows: list[resources.ResourceRow],
                 children: Mapping[uuid.UUID, stacks.StackRow], parent_resource: str | None) -> None:
        self.stack = stack
        self.rows = {r.name: r for r in rows if r.is_current}
        self.needed = resources.required_by(self.rows.values())
        self.children = children
        self.parent_resource = parent_resource

    @classmethod
    def of(cls, stored: Stored, stack: stacks.StackRow, parent_resource: str | None) -> _Current:
        return cls(stack, stored.rows[stack.id], stored.children[stack.id], parent_resource)

    def child_of(self, name: str) -> stacks.StackRow | None:
        row = self.rows.get(name)
        if row is None or not row.physical_id:
            return None
        try:
            return self.children.get(uuid.UUID(row.physical_id))
        except ValueError:
            return None

    def entry(self, name: str) -> Existing:
        row = self.rows[name]
        return Existing(self.stack, row, self.needed.get(row.id, []), self.parent_resource,
                        self.child_of(name))


def _decisions(current: _Current, new: LoadedStack, registry: Registry,
               old_environments: Mapping[uuid.UUID, ResourceRegistry]) -> preview.Changes:
    rows = current.rows
    resolver = StackResolver(new.definition, StaticResourceData({n: r.reference for n, r in rows.items()},
                                                                {n: r.attributes for n, r in rows.items()}))
    env = new.environment.registry

    def plugin_of(name: str) -> ResourceType:
        return registry.implementing(new.definition.resources[name].type, resource_name=name, environment=env)

    def props(name: str) -> Mapping[str, Any]:
        return plugin_of(name).validate(resolver.properties(name), resource_name=name)

    def replace_rule(name: str) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool]:
        return plugin_of(name).needs_replace

    def same_implementation(name: str) -> bool:
        row = rows[name]
        was = old_environments.get(row.template_id) if row.template_id else None
        return type(plugin_of(name)) is registry.implementation(row.type, resource_name=name,
                                                                environment=env if was is None else was)

    return preview.changes({n: r.state() for n, r in rows.items()},
                           {n: d.type for n, d in new.definition.resources.items()}, props,
                           replace_rule, never_updates=lambda n: plugin_of(n).never_updates,
                           always_updates=lambda n: plugin_of(n).always_updates,
                           same_implementation=same_implementation, external_id=resolver.external_id)


def _compare(stored: Stored, stack: stacks.StackRow, new: LoadedStack, out: Changes, how: nesting.Expansion,
             *, new_name: str, new_id: str, parent_resource: str | None, show_nested: bool,
             depth: int) -> None:
    """The changes of ``stack`` (as it is) to ``new``, added to ``out``; nested ones with ``show_nested``."""
    current = _Current.of(stored, stack, parent_resource)
    old_ids = {r.template_id for r in current.rows.values() if r.template_id is not None}
    old_environments = {tid: Environment.from_dict(raw).registry
                        for tid, raw in stored.environments.items() if tid in old_ids}
    decided = _decisions(current, new, how.registry, old_environments)
    rows = current.rows
    data = StaticResourceData({n: r.reference for n, r in rows.items()},
                              {n: r.attributes for n, r in rows.items()})
    planned = preview.planned_resources(new, how.registry, data)

    def shown_new(name: str) -> Planned:
        return Planned(planned[name], new_name, new_id, parent_resource)

    out["unchanged"].extend(shown_new(n) for n in decided.unchanged)
    out["updated"].extend(current.entry(n) for n in decided.updated)
    out["replaced"].extend(shown_new(n) for n in decided.replaced)
    out["added"].extend(shown_new(n) for n in decided.added)
    out["deleted"].extend(current.entry(n) for n in decided.deleted)
    if not show_nested:
        return
    for name in [*decided.deleted, *decided.replaced]:
        child = current.child_of(name)
        if child is not None:
            _all_deleted(stored, child, name, out)
    for name in [*decided.added, *decided.replaced]:
        nested = _new_nested(new, name, planned[name], how, stack_name=new_name, depth=depth)
        if nested is not None:
            inner = preview.create_preview(nested.stack, how, stack_name=nested.name, parent_resource=name,
                                           depth=depth + 1)
            out["added"].extend(Planned(r, s.name, "None", s.parent_resource) for s, r in inner.flattened())
    for name in decided.updated:
        child = current.child_of(name)
        row = rows[name]
        nested = _new_nested(new, name, planned[name], how, stack_name=new_name, depth=depth,
                             data=row.data, old_properties=row.properties)
        if child is not None and nested is not None:
            _compare(stored, child, nested.stack, out, how, new_name=nested.name, new_id="None",
                     parent_resource=name, show_nested=True, depth=depth + 1)


def _new_nested(new: LoadedStack, name: str, planned: preview.PlannedResource, how: nesting.Expansion, *,
                stack_name: str, depth: int, data: Mapping[str, str] | None = None,
                old_properties: Mapping[str, Any] | None = None) -> nesting.NestedStack | None:
    plugin = nesting.plugin_of(how.registry, new, name)
    if plugin is None:
        return None
    return preview.nested_stack(new, name, plugin, planned.properties, stack_name=stack_name, how=how,
                                depth=depth, data=data, old_properties=old_properties)


def _all_deleted(stored: Stored, stack: stacks.StackRow, parent_resource: str, out: Changes) -> None:
    """Every resource of an existing nested stack, and of the stacks nested in it, as deleted."""
    current = _Current.of(stored, stack, parent_resource)
    for name in current.rows:
        out["deleted"].append(current.entry(name))
        child = current.child_of(name)
        if child is not None:
            _all_deleted(stored, child, name, out)
