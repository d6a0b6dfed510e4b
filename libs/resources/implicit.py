"""Dependencies resource types add to a stack's own (Heat's ``add_dependencies``), all rules at once.

:func:`implicit_dependencies` is the :data:`~libs.template.stack.ImplicitDependencies` the
stack definitions of the planner, the worker and the api are given: each type's rules
(one function per family of types) over the whole stack, merged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Final

from libs.resources.neutron import dependencies as neutron
from libs.template.stack import StackDefinition

RULES: Final[tuple[Callable[[StackDefinition], Mapping[str, set[str]]], ...]] = (
    neutron.implicit_dependencies,
)


# The types any rule orders (the others depend only on what their template says).
RULED_TYPES: Final[frozenset[str]] = neutron.RULED


def implicit_dependencies(stack: StackDefinition) -> dict[str, set[str]]:
    merged: dict[str, set[str]] = {}
    for rule in RULES:
        for name, names in rule(stack).items():
            merged.setdefault(name, set()).update(names)
    return merged
