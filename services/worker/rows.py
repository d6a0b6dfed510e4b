"""Small helpers over resource rows for the worker's steps: the clock, a step's context, names."""

from __future__ import annotations

import dataclasses
import datetime
import random
import time
import uuid
from collections.abc import Callable, Collection, Mapping
from typing import Any

from libs.db import Conn, resources, stacks, traversals
from libs.engine import desired
from libs.engine.keys import NodeKind
from libs.engine.status import Action
from libs.engine.step import Decision, RowState, decide
from libs.resources import base
from libs.resources.base import ResourceType, physical_name
from libs.resources.software_config import SoftwareType
from libs.resources.steps import Replaced, Software, StepContext
from services.worker import pending

# Where a resource paused at a named step inside its action keeps that step's hook.
NAMED_STEP_KEY = "ember_step"
# The traversal whose action on the row has asked its nested stack (written with the ask).
NESTED_KEY = "ember_nested"
# Actions whose plugin is the one the desired definition names; any other acts on what the row is.
DEFINITION_ACTIONS = frozenset({Action.CREATE, Action.UPDATE, Action.ADOPT})


def merged(data: dict[str, Any], changes: Any) -> dict[str, Any]:
    """A plugin's data after a step: its changes over the old, ``None`` deleting a key."""
    out = dict(data)
    for key, value in dict(changes).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def short_id(resource_id: int) -> str:
    # Stable per row, 12 lowercase characters, as Heat's short ids look.
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    n = (resource_id * 0x9E3779B97F4A7C15) & ((1 << 60) - 1)
    return "".join(alphabet[(n >> (5 * i)) & 31] for i in range(12))


def event_physical_id(stack_name: str, row: resources.ResourceRow) -> str:
    """The physical id an event of ``row`` carries: before the resource has one, the name it will have
    (Heat's events fall back to the resource's physical name)."""
    return row.physical_id or physical_name(stack_name, row.name, short_id(row.id))


def deletion_policy(want: desired.Desired | None, name: str) -> str:
    if want is not None and name in want.definition.resources:
        return want.definition.resources[name].deletion_policy
    return "Delete"


def own_template(row: resources.ResourceRow, trav: traversals.TraversalRow, stack: stacks.StackRow
                 ) -> uuid.UUID | None:
    """The desired state whose environment and files say what ``row`` is.

    The one it was made or last converged with (recorded when its first action
    starts); for a row older than that record, the traversal's, else the stack's.
    """
    return row.template_id or trav.template_id or stack.template_id


def follows_definition(action: str, want: desired.Desired | None, name: str) -> bool:
    """Whether ``action`` on resource ``name`` takes its plugin from the desired definition."""
    return action in DEFINITION_ACTIONS and want is not None and name in want.definition.resources


def now() -> datetime.datetime:
    """The worker's one clock."""
    return datetime.datetime.now(datetime.UTC)


def cloud_tag(row: resources.ResourceRow) -> str:
    return base.cloud_tag(row.stack_id, row.id)


def step_context(stack: stacks.StackRow, row: resources.ResourceRow, props: Mapping[str, Any],
                 rng: random.Random, *, ready_timeout: float | None = None, api_url: str | None = None
                 ) -> StepContext:
    """What a plugin step of ``row`` is given (enriched by the caller for the rarer types)."""
    return StepContext(
        stack_id=str(stack.id), stack_name=stack.name, resource_name=row.name,
        physical_id=row.physical_id, properties=props, old_properties=row.properties,
        data=plugin_data(row.data), now=time.time(),
        started_at=(row.action_started or now()).timestamp(), short_id=short_id(row.id),
        rng=rng, cloud_tag=cloud_tag(row), ready_timeout=ready_timeout, project=stack.project,
        api_url=api_url)


async def with_replaced(conn: Conn, row: resources.ResourceRow, ctx: StepContext, *, restores: bool
                        ) -> StepContext:
    """A first step given the other row of a replacement (its type ``prepares_replace``): a
    replacement's create, the row it replaces; a rollback's update that ``restores``, the failed
    replacement of its row."""
    if restores:
        other = await resources.unmade_replacement(conn, row.id)
    else:
        other = await resources.get(conn, row.replaces) if row.replaces is not None else None
    if other is None:
        return ctx
    given = Replaced(physical_id=other.physical_id, properties=other.properties or {},
                     data=plugin_data(other.data))
    if restores:
        return dataclasses.replace(ctx, replaced_by=given)
    return dataclasses.replace(ctx, replaces=given)


def plugin_data(data: Mapping[str, Any]) -> dict[str, Any]:
    """The row's data as a plugin sees it (without the calls the worker keeps there)."""
    return pending.without(data)


def replace_rule(plugin: ResourceType | None, software: Software | None
                 ) -> Callable[[Mapping[str, Any], Mapping[str, Any]], bool] | None:
    """The type's replacement rule: its properties' first, then (read for it) what is stored."""
    if plugin is None:
        return None
    if software is None or not isinstance(plugin, SoftwareType):
        return plugin.needs_replace
    typed = plugin
    return lambda old, new: typed.needs_replace(old, new) or typed.replace_for_stored(old, new, software)


def decision(kind: NodeKind, trav: traversals.TraversalRow, row: RowState, plugin: ResourceType | None, *,
             in_template: bool, new_type: str | None, props: Mapping[str, Any] | None, same: bool | None,
             external_id: str | None, restricted: Collection[str], nested_check_failed: bool = False,
             preemptible: bool = False, software: Software | None = None) -> Decision:
    """What the node does to its row (:func:`libs.engine.step.decide`), from what the worker loaded.

    ``plugin``: what the desired definition's type resolves to (None: not converging it).
    ``software``: what a software type's update reads (:meth:`SoftwareType.update_reads`).
    """
    return decide(kind, trav.action, str(trav.id), str(trav.template_id) if trav.template_id else None,
                  row, in_template=in_template, new_type=new_type, new_properties=props,
                  needs_replace=replace_rule(plugin, software),
                  never_updates=plugin is not None and plugin.never_updates,
                  always_updates=plugin is not None and plugin.always_updates,
                  same_implementation=same, nested_check_failed=nested_check_failed,
                  external_id=external_id, restricted=restricted, preemptible=preemptible,
                  prepares_replace=plugin is not None and plugin.prepares_replace)
