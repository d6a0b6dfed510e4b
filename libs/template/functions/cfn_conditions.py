"""CFN conditions: ``Fn::If`` and the condition functions of the ``Conditions`` section.

A condition argument is a boolean, the name of a condition of the template, or
a condition function; null counts as true (Heat's ``is_enabled(None)``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from libs.template.functions.base import (
    HEAT_CFN_MODULE,
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


class If(Macro):
    """One of two values, chosen by a condition."""

    heat_module = HEAT_CFN_MODULE

    _decided: bool | None  # None: chosen when resolved
    _branches: dict[bool, Any]  # the parsed branches that may be taken

    def check_args(self) -> None:
        args = self.args
        message = (f'Arguments to "{self.name}" must be of the form: '
                   "[condition_name, value_if_true, value_if_false]")
        if not args or not isinstance(args, Sequence) or isinstance(args, str):
            raise ValueError(message)
        try:
            condition, if_true, if_false = args
        except ValueError:
            raise ValueError(message) from None
        # Heat parses the condition at the path "Fn::If", without the enclosing
        # path, and its errors keep that short path.
        self._condition = self.parse(condition, self.name, self.ctx.for_conditions())
        resolver = self.ctx.resolver
        if resolver is not None:
            # Decided while parsing, as in Heat: the other branch is never parsed,
            # so neither its errors nor its dependencies count.
            taken = condition_holds(resolve(self._condition, resolver), resolver)
            self._decided = taken
            self._branches = {taken: self.parse(if_true if taken else if_false, self.path)}
        else:
            self._decided = None
            self._branches = {True: self.parse(if_true, self.path),
                              False: self.parse(if_false, self.path)}

    def _repr_result(self) -> str:
        # Heat's macros show what they parsed to: the branch taken.
        return "???" if self._decided is None else repr(self._branches[self._decided])

    def _live(self) -> Iterator[Any]:
        return iter(self._branches.values())

    def result(self, resolver: Resolver) -> Any:
        taken = self._decided
        if taken is None:
            taken = condition_holds(resolve(self._condition, resolver), resolver)
        return resolve(self._branches[taken], resolver, nullable=True)

    def validate(self) -> None:
        for branch in self._live():
            validate(branch)

    def dependencies(self, path: str | None = None) -> Iterator[Reference]:
        for branch in self._live():
            yield from dependencies(branch, self.inner_path(path))

    def dep_attrs(self, resource: str) -> Iterator[str]:
        for branch in self._live():
            yield from dep_attrs(branch, resource)

    def all_dep_attrs(self) -> Iterator[tuple[Any, Any]]:
        for branch in self._live():
            yield from all_dep_attrs(branch)


class Equals(Function):
    """Whether two values are equal once resolved (no type conversion: 1 is not "1")."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        message = f'Arguments to "{self.name}" must be of the form: [value_1, value_2]'
        if not self.args or not isinstance(self.args, list):
            raise ValueError(message)
        try:
            self._left, self._right = self.args
        except ValueError:
            raise ValueError(message) from None

    def result(self, resolver: Resolver) -> Any:
        return bool(resolve(self._left, resolver) == resolve(self._right, resolver))


class Not(Function):
    """The negation of the one condition in its list."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        args = self.args
        if (not args or not isinstance(args, Sequence) or isinstance(args, str)
                or len(args) != 1):
            raise ValueError(f'Arguments to "{self.name}" must be of the form: [condition]')
        self._condition = args[0]

    def result(self, resolver: Resolver) -> Any:
        return not condition_holds(resolve(self._condition, resolver), resolver)


class _Combination(Function):
    """Two or more conditions combined."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        if not isinstance(self.args, Sequence) or isinstance(self.args, str):
            raise ValueError(f'Arguments to "{self.name}" must be a list of conditions')
        if len(self.args) < 2:
            raise ValueError(f'The minimum number of condition arguments to "{self.name}" is 2.')

    def _values(self, resolver: Resolver) -> Iterator[bool]:
        # Every argument is resolved first; named conditions are then looked up
        # lazily, so the first decisive value stops the lookups (Heat's all/any).
        return (condition_holds(value, resolver) for value in resolve(self.args, resolver))


class And(_Combination):
    """True when every condition in its list is true (two at least)."""

    def result(self, resolver: Resolver) -> Any:
        return all(self._values(resolver))


class Or(_Combination):
    """True when any condition in its list is true (two at least)."""

    def result(self, resolver: Resolver) -> Any:
        return any(self._values(resolver))
