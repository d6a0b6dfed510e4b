"""Budgets on template data: how deep it nests, how far YAML aliases expand it, how large values grow.

Heat has no such limits and falls over on small hostile inputs: eight levels of YAML
aliases (454 bytes) expand to 43 million nodes, an output nested 50,000 levels crashes
the C parser's recursion, and ``repeat`` over three lists of 200 builds 8 million
strings. Each budget is checked before the work it bounds can happen (alias expansion
and depth from the parser's events, before anything is built; a function's result
size while it is measured, stopping at the limit), and ends in a 400 naming the
budget. The defaults are far above what real templates use.

The budgets are process-wide: every service sets them once from its configuration
(:func:`configure`); template code reads them with :func:`current`.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import yaml

from libs.template.errors import RequestLimitExceeded

# Python code walks template data recursively (parsing functions, resolving them,
# copying), a few frames per level; the interpreter's limit is 1000 frames.
DEPTH_CEILING = 200

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class Budgets:
    # Levels of maps and lists in a template, environment, file or parameter value.
    max_depth: int = 100
    # Nodes YAML aliases may add to one document, summed over every alias.
    max_alias_nodes: int = 100_000
    # Size of one function's result (characters of text, 8 per number, 2 per item).
    max_value_size: int = 4 * 2**20
    # Sum of the sizes of every function result in one evaluation (a property
    # value, an output), intermediate ones included.
    max_evaluation_size: int = 32 * 2**20


_budgets = Budgets()


def configure(budgets: Budgets) -> None:
    """Set once as a service starts, before any template is read."""
    global _budgets  # noqa: PLW0603 - process-wide configuration, like logging's
    _budgets = budgets


def current() -> Budgets:
    return _budgets


class ValueTooLarge(ValueError):
    """A function's value over budget: a ValueError, so it fails where the function sits,
    with that place's path, as any other bad function value does."""


def too_deep(what: str, limit: int | None = None) -> RequestLimitExceeded:
    return RequestLimitExceeded(depth_message(what, limit))


def depth_message(what: str, limit: int | None = None) -> str:
    return f"{what} is nested more than {_budgets.max_depth if limit is None else limit} levels deep."


def check_depth(value: Any, what: str, limit: int | None = None,
                error: Callable[[str], Exception] = RequestLimitExceeded) -> None:
    """Refuse ``value`` (already built, e.g. from a JSON body) nested deeper than the budget.

    Iterative, so it cannot itself run out of stack. ``error`` makes the exception from
    the message: a ValueError where the value is a function's or a parameter's.
    """
    limit = _budgets.max_depth if limit is None else limit
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        # dict and list first: Mapping's isinstance goes through abc, slow over 10^6 items.
        if kind is dict:
            children: Any = item.values()
        elif kind is list:
            children = item
        elif isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            raise error(depth_message(what, limit))
        below = depth + 1
        # Leaves are most of a big template and nest nothing: not worth a trip through the stack.
        stack.extend([(child, below) for child in children if type(child) not in _LEAVES])


_LEAVES = frozenset({str, int, float, bool, type(None)})


def check_yaml_events(text: str, loader: type[Any], what: str) -> None:
    """Walk the YAML's parse events (libyaml's parser does not recurse) and refuse a
    document that nests too deep or whose aliases expand past the node budget, before
    the recursive composer ever sees it.

    Each anchored node's expanded size and height are recorded when it ends, so an
    alias adds what it stands for without anything being expanded.
    """
    budgets = _budgets
    sizes: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, height)
    # One frame per open collection: [anchor, nodes so far, tallest child].
    open_: list[list[Any]] = []
    expanded = 0

    def add(nodes: int, height: int) -> None:
        if len(open_) + height > budgets.max_depth:
            raise too_deep(what, budgets.max_depth)
        if open_:
            open_[-1][1] += nodes
            open_[-1][2] = max(open_[-1][2], height)

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            if len(open_) >= budgets.max_depth:
                raise too_deep(what, budgets.max_depth)
            open_.append([event.anchor, 1, 0])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, nodes, tallest = open_.pop()
            if anchor is not None:
                sizes[anchor] = (nodes, tallest + 1)
            add(nodes, tallest + 1)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                sizes[event.anchor] = (1, 0)
            add(1, 0)
        elif isinstance(event, yaml.AliasEvent):
            nodes, height = sizes.get(event.anchor or "", (1, 0))
            expanded += nodes
            if expanded > budgets.max_alias_nodes:
                raise RequestLimitExceeded(
                    f"{what} expands YAML aliases to more than {budgets.max_alias_nodes} nodes.")
            add(nodes, height)


def size_of(value: Any, limit: int) -> int:
    """The size of ``value`` as the budgets count it, or ``limit + 1`` as soon as it passes
    ``limit`` (so a huge value costs no more to refuse than the limit does to measure)."""
    return _walk(value, limit, None)


def _walk(value: Any, limit: int, max_depth: int | None) -> int:
    # Size and, given ``max_depth``, depth in one pass: -1 when too deep.
    total = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            total += len(item)
            continue
        if isinstance(item, Mapping):
            total += 2 * len(item)
            children: Any = [c for pair in item.items() for c in pair]
        elif isinstance(item, (list, tuple)):
            total += 2 * len(item)
            children = item
        else:
            total += 8
            continue
        if total > limit:
            return limit + 1
        if max_depth is not None and depth >= max_depth:
            return -1
        stack.extend((child, depth + 1) for child in children)
    return total if total <= limit else limit + 1


class _Meter:
    def __init__(self) -> None:
        self.spent = 0


_meter: contextvars.ContextVar[_Meter | None] = contextvars.ContextVar("evaluation_meter", default=None)


def metered(call: Callable[[], T]) -> T:
    """``call()`` as one evaluation: the outermost call opens its total, nested calls share it."""
    if _meter.get() is not None:
        return call()
    token = _meter.set(_Meter())
    try:
        return call()
    finally:
        _meter.reset(token)


def expect(size: int, what: str) -> None:
    """Refuse, before building it, a value that will be ``size`` large."""
    if size > _budgets.max_value_size:
        raise ValueTooLarge(f"{what}: the result would be larger than the limit of "
                            f"{_budgets.max_value_size} (EMBER_MAX_VALUE_SIZE).")


def charge(value: Any, what: str) -> None:
    """Measure a function's result against the value budget and the evaluation's total."""
    budgets = _budgets
    if isinstance(value, str):
        size = len(value)
    elif isinstance(value, (Mapping, list, tuple)):
        size = _walk(value, budgets.max_value_size, budgets.max_depth)
        if size < 0:
            raise ValueTooLarge(depth_message(f"The result of {what}"))
    else:
        size = 8
    if size > budgets.max_value_size:
        raise ValueTooLarge(f"{what}: the result is larger than the limit of "
                            f"{budgets.max_value_size} (EMBER_MAX_VALUE_SIZE).")
    meter = _meter.get()
    if meter is not None:
        meter.spent += size
        if meter.spent > budgets.max_evaluation_size:
            raise ValueTooLarge(f"{what}: the values computed exceed the limit of "
                                f"{budgets.max_evaluation_size} per evaluation (EMBER_MAX_EVALUATION_SIZE).")
