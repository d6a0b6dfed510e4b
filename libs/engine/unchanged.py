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

from collections.abc import Callable, Collection, Mapping
from typing import Any, NamedTuple, Protocol

from libs.engine.keys import NodeKind
from libs.engine.status import Action, Status
from libs.engine.step import RowState, Verb, decide
from libs.graph.dag import Graph
from libs.template import written
from libs.template.resolution import StackResolver, StaticResourceData
from libs.template.stack import StackDefinition


class TypeRules(NamedTuple):
    """What a resource type says about updates: the plugin's answers, as plain callables."""

    never_updates: bool
    needs_replace: Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
    validate: Callable[[Mapping[str, Any], str], Mapping[str, Any]]
    # A nested stack: every update reaches it, so it is never settled here.
    always_updates: bool = False
    # What the type resolves to (the plugin's class), compared with the row's.
    implementation: object = None
    # Its replacement takes from the resource it replaces (given back in a rollback).
    prepares_replace: bool = False


def unchanged(definition: StackDefinition, action: Action, current: Mapping[str, RowState],
              data: StaticResourceData, rules: Callable[[str, str], TypeRules], *,
              exclude: frozenset[str] = frozenset(),
              implementation_of: Callable[[RowState], object] | None = None,
              already: Collection[str] = frozenset()) -> list[str]:
    """Names whose update node would be a ``noop``, in dependency order.

    ``rules(name, type)`` gives the type's rules (:class:`TypeRules`). A resource whose
    properties cannot be resolved or validated is not settled here: its node fails it
    with Heat's reason.
    ``implementation_of(row)`` is what the row's type resolved to when it was
    last converged (without it, a changed type name is a changed implementation).
    ``already``: names known to be left alone (:func:`same_definitions`), neither
    resolved again nor listed, though what requires them may be.
    """
    resolver = StackResolver(definition, data)
    settled: list[str] = []
    done: set[str] = set(already)
    # Those left to compare, in the order of their dependencies on each other (those on a name
    # already known to stay are met): a group's member replaced is two of 10^5, not a 10^5 graph.
    left = [name for name in definition.enabled_names() if name not in already]
    among = frozenset(left)
    for name in Graph({n: definition.required(n) & among for n in left}).topological_order():
        row = current.get(name)
        if (row is None or name in exclude or row.status != Status.COMPLETE
                or row.action in (Action.INIT, Action.DELETE)):
            continue
        if not definition.required(name) <= done:
            continue
        new_type = definition.resources[name].type
        try:
            rule = rules(name, new_type)
        except KeyError:
            continue  # a type no plugin implements: its node fails it, with the reason
        if rule.always_updates:
            continue
        same = new_type == row.type
        if implementation_of is not None:
            same = rule.implementation is not None and implementation_of(row) is rule.implementation
        props: Mapping[str, Any] | None = None
        try:
            external_id = resolver.external_id(name)
            if not (rule.never_updates and same):
                props = rule.validate(resolver.properties(name), name)
        except Exception:
            continue
        verb = decide(NodeKind.UPDATE, action, "planning", "planning", row, in_template=True,
                      new_type=new_type,
                      new_properties=props, needs_replace=rule.needs_replace,
                      never_updates=rule.never_updates, same_implementation=same,
                      external_id=external_id, prepares_replace=rule.prepares_replace).verb
        if verb == Verb.NOOP:
            settled.append(name)
            done.add(name)
    return settled


# The sections of a template that say nothing of one resource's definition.
_NOT_DEFINITIONS = frozenset({"resources", "outputs", "description"})


class Converging(Protocol):
    """What :func:`same_definitions` reads of a current row (a whole row, its standing, or its
    :class:`RowState`: a group's 10^6 members are compared without making one of those each)."""

    @property
    def type(self) -> str: ...
    @property
    def action(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def template_id(self) -> object: ...


def same_definitions(old: Mapping[str, Any], new: Mapping[str, Any], current: Mapping[str, Converging], *,
                     old_template_id: object, exclude: Collection[str],
                     always_updates: Callable[[str, str], bool],
                     ruled_types: Collection[str] = frozenset()) -> list[str]:
    """Names whose definition in the template ``new`` is, as written, the one they converged with in
    ``old`` (their rows' desired state ``old_template_id``), around the same everything else, and
    that require nothing: no function of theirs reads another resource and their type is not one
    that ``ruled_types`` orders after others (implicit dependencies). ``current`` holds the current
    rows but those with a replacement never made current (which a rollback may want back).

    The caller knows both desired states have the same files, environment and facade; so
    every function in such a definition resolves as it did. ``exclude`` holds what others
    read and what may pause. An update leaves them alone as :func:`unchanged` would find,
    without parsing or resolving each again (a group's member template after one member is
    replaced: 10^5 - 1 of them).
    """
    if {k: v for k, v in old.items() if k not in _NOT_DEFINITIONS} != {
            k: v for k, v in new.items() if k not in _NOT_DEFINITIONS}:
        return []
    old_resources, new_resources = old.get("resources"), new.get("resources")
    if not isinstance(old_resources, Mapping) or not isinstance(new_resources, Mapping):
        return []
    any_reads = written.mentions(new_resources, written.READING)
    return [name for name, row in current.items()
            if row.template_id == old_template_id and row.status == Status.COMPLETE
            and row.action not in (Action.INIT, Action.DELETE)
            and name not in exclude and name in new_resources
            and old_resources.get(name) == new_resources[name] and not always_updates(name, row.type)
            and _requires_nothing(new_resources[name], any_reads, ruled_types)]


def _requires_nothing(snippet: Any, any_reads: bool, ruled_types: Collection[str]) -> bool:
    type_name = snippet.get("type") if isinstance(snippet, Mapping) else None
    if not isinstance(type_name, str) or type_name in ruled_types:
        return False
    return not any_reads or not written.mentions(snippet, written.READING)
