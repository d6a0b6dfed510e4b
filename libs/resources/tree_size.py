"""How many resources a stack's whole tree would hold, counted before anything is made.

Heat counts ``max_resources_per_stack`` over the root stack's whole tree, but
checks it only as each nested stack is made, so a group far over the limit is
accepted and fails at run time. Ember refuses such a stack up front (create,
update and their previews), as Heat's preview does, so that nothing is
half-made and no work is queued for it. Only what is known before the run is
counted: a group whose size reads another resource counts as empty here and
is checked by the worker when its nested stack is made.

A group's members are alike, so a group is counted as one member's subtree
times its size; a 100,000-member group costs one member's expansion.
"""

from __future__ import annotations

import dataclasses

from libs.resources import nesting
from libs.resources.resource_group import MemberStack
from libs.template import errors
from libs.template.limits import Limits
from libs.template.resolution import StackResolver, StaticResourceData


def check_total(stack: nesting.StackParts, how: nesting.Expansion, limits: Limits, *,
                stack_name: str) -> None:
    """Raise Heat's ``RequestLimitExceeded`` when the tree holds more resources than the limit."""
    if limits.max_resources_per_stack == -1:
        return
    total = _count(stack, how, limits, stack_name=stack_name, depth=0, budget=limits.max_resources_per_stack)
    limits.check_resource_count(total)


def _count(stack: nesting.StackParts, how: nesting.Expansion, limits: Limits, *, stack_name: str,
           depth: int, budget: int) -> int:
    """The resources of ``stack`` and below; stops once past ``budget`` (the caller only needs "over")."""
    total = 0
    resolver = StackResolver(stack.definition, StaticResourceData())
    for name in stack.definition.resources:
        total += 1
        if total > budget:
            return total
        plugin = nesting.plugin_of(how.registry, stack, name)
        if not nesting.expands(plugin):
            continue
        try:
            properties = nesting.typed_properties(plugin, stack, name, resolver)
        except errors.TemplateError:
            continue  # its own validation reports it
        size = plugin.size(properties) if isinstance(plugin, MemberStack) else None
        if size == 0:
            continue
        sized = dataclasses.replace(how, one_member=size is not None)
        try:
            nested = nesting.expand(stack, name, plugin, properties, stack_name=stack_name, how=sized,
                                    depth=depth)
        except errors.TemplateError:
            continue  # nesting.check reports what does not load; the depth limit included
        if nested is None:
            continue
        left = budget - total
        each = _count(nested.stack, how, limits, stack_name=nested.name, depth=depth + 1,
                      budget=left if size is None else left // size + 1)
        total += each if size is None else each * size
    return total
