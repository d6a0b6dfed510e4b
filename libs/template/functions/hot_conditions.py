"""HOT's condition functions (``equals``, ``not``, ``and``, ``or``) and ``if``."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from libs.template.functions.base import (
    REMOVED,
    Function,
    Macro,
    Reference,
    Resolver,
    all_dep_attrs,
    condition_holds,
    dep_attrs,
    dependencies,
    resolve,
    validate,
)


class Equals(Function):
    """Whether two values are equal."""

    def check_args(self) -> None:
        if not self.args or not isinstance(self.args, list) or len(self.args) != 2:
            raise ValueError(f'Arguments to "{self.name}" must be of the form: [value_1, value_2]')

    def result(self, resolver: Resolver) -> Any:
        return resolve(self.args[0], resolver) == resolve(self.args[1], resolver)


class Not(Function):
    """Negate a condition."""

    def check_args(self) -> None:
        if self.args is None:
            raise ValueError(f'Argument to "{self.name}" must be a condition')

    def result(self, resolver: Resolver) -> Any:
        return not condition_holds(resolve(self.args, resolver), resolver)


class _Conditions(Function):
    def check_args(self) -> None:
        if not isinstance(self.args, Sequence) or isinstance(self.args, str):
            raise ValueError(f'Arguments to "{self.name}" must be a list of conditions')
        if len(self.args) < 2:
            raise ValueError(f'The minimum number of condition arguments to "{self.name}" is 2.')


class And(_Conditions):
    """Whether all of two or more conditions hold."""

    def result(self, resolver: Resolver) -> Any:
        # Lazy, as in Heat: names after the first false one are not looked up.
        return all(condition_holds(c, resolver) for c in resolve(self.args, resolver))


class Or(_Conditions):
    """Whether any of two or more conditions holds."""

    def result(self, resolver: Resolver) -> Any:
        return any(condition_holds(c, resolver) for c in resolve(self.args, resolver))


class If(Macro):
    """Return one of two values, depending on whether a condition holds."""

    # Whether value_if_false may be left out (2021-04-16), dropping the enclosing item.
    _optional_false = False

    condition: Any
    branches: dict[bool, Any]
    chosen: bool | None

    def _arguments(self) -> tuple[Any, Any, Any]:
        args = self.args
        least = 2 if self._optional_false else 3
        if (not args or not isinstance(args, Sequence) or isinstance(args, str)
                or not least <= len(args) <= 3):
            raise ValueError(f'Arguments to "{self.name}" must be of the form: '
                             "[condition_name, value_if_true, value_if_false]")
        return args[0], args[1], args[2] if len(args) == 3 else REMOVED

    def check_args(self) -> None:
        condition, if_true, if_false = self._arguments()
        # Heat parses the condition with the function's name alone as its path.
        self.condition = self.parse(condition, self.name, self.ctx.for_conditions())
        resolver = self.ctx.resolver
        if resolver is None:
            self.chosen = None
            self.branches = {True: self.parse(if_true, self.path),
                             False: self.parse(if_false, self.path)}
        else:
            # As Heat does: decide now, and parse only the branch taken, so the
            # other one is neither validated nor a dependency.
            self.chosen = self.holds(resolver)
            self.branches = {self.chosen: self.parse(if_true if self.chosen else if_false, self.path)}

    def _repr_result(self) -> str:
        # Heat's macros show what they parsed to: the branch taken.
        return "???" if self.chosen is None else repr(self.branches[self.chosen])

    def holds(self, resolver: Resolver) -> bool:
        """Whether the condition holds."""
        return condition_holds(resolve(self.condition, resolver), resolver)

    def validate(self) -> None:
        for branch in self.branches.values():
            validate(branch)

    def result(self, resolver: Resolver) -> Any:
        chosen = self.holds(resolver) if self.chosen is None else self.chosen
        return resolve(self.branches[chosen], resolver, nullable=True)

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        for branch in self.branches.values():
            yield from dependencies(branch, self.inner_path(path))

    def dep_attrs(self, resource: str) -> Iterator[str]:
        for branch in self.branches.values():
            yield from dep_attrs(branch, resource)

    def all_dep_attrs(self) -> Iterator[tuple[Any, Any]]:
        for branch in self.branches.values():
            yield from all_dep_attrs(branch)


class IfNullable(If):
    """Return one of two values by a condition; with no second value, drop the enclosing item."""

    _optional_false = True
