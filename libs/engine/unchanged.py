"""Resources an update leaves alone, known before any worker runs.

A resource whose node would only answer ``noop`` needs no node: the planner
records the new template on its row in bulk and leaves it out of the graph.
That holds when the worker's own :func:`~libs.engine.step.decide` says
``noop`` now and nothing the resource reads can change during the traversal,
that is when every resource it requires is left alone too. A no-change update
of a large stack then costs one statement per table instead of two nodes per
resource; the answer for any single resource is the one its node would give.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from libs.engine.step import RowState, decide
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition


class TypeRules(NamedTuple):
    """What a resource type says about updates: the plugin's answers, as plain callables."""

    never_updates: bool
    needs_replace: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
    validate: Callable[[Mapping[str, Any], str], Mapping[str, Any]]


def unchanged(definition: StackDefinition, action: str, current: Mapping[str, RowState],
              data: StaticResourceData, rules: Callable[[str, str], TypeRules], *,
              exclude: frozenset[str] = frozenset()) -> list[str]:
    """Names whose update node would be a ``noop``, in dependency order.

    ``rules(name, type)`` gives the type's ``never_updates``, its replace rule and its
    property validation. A resource whose properties cannot be resolved or
    validated is not settled here: its node fails it with Heat's reason.
    """
    resolver = StackResolver(definition, data)
    settled: list[str] = []
    done: set[str] = set()
    for name in definition.graph().topological_order():
        row = current.get(name)
        if row is None or name in exclude or row.status != "COMPLETE" or row.action in ("INIT", "DELETE"):
            continue
        if not definition.required(name) <= done:
            continue
        new_type = definition.resources[name].type
        try:
            never_updates, needs_replace, validate = rules(name, new_type)
        except KeyError:
            continue  # a type no plugin implements: its node fails it, with the reason
        props: Mapping[str, Any] | None = None
        if not (never_updates and new_type == row.type):
            try:
                props = validate(resolver.properties(name), name)
            except Exception:
                continue
        verb = decide("u", action, "planning", "planning", row, in_template=True, new_type=new_type,
                      new_properties=props, needs_replace=needs_replace, never_updates=never_updates).verb
        if verb == "noop":
            settled.append(name)
            done.add(name)
    return settled
