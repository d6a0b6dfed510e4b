"""HOT's ``repeat``, in its three versions: lists (2015-04-30), maps too (2016-10-14), and
``permutations`` (2017-09-01)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence, Sized
from typing import Any

from libs.template import budgets
from libs.template.functions.base import Function, Resolver, resolve

_EXAMPLE = ("repeat:\n              template: This is %var%\n              for_each:\n"
            "                %var%: ['a', 'b', 'c']")


class Repeat(Function):
    """Make a list with one copy of a template per item of a list, placeholders replaced."""

    # Whether every combination of the lists is made (else they are zipped).
    permutations = True

    def check_args(self) -> None:
        if not isinstance(self.args, Mapping):
            raise TypeError(f'Arguments to "{self.name}" must be a map')
        # Heat accepts unknown keys here, and so must we.
        if "for_each" not in self.args or "template" not in self.args:
            raise KeyError(f'"repeat" syntax should be {_EXAMPLE}')

    def validate(self) -> None:
        super().validate()
        for_each = self.args["for_each"]
        if not isinstance(for_each, (Function, Mapping)):
            raise TypeError(f'The "for_each" argument to "{self.name}" must contain a map')

    def _check_values(self, values: Any) -> None:
        if isinstance(values, str) or not isinstance(values, (Sequence, Function)):
            raise TypeError(f'The values of the "for_each" argument to "{self.name}" must be lists')

    def result(self, resolver: Resolver) -> Any:
        for_each = resolve(self.args["for_each"], resolver)
        if not isinstance(for_each, Mapping):
            # Heat calls .items() on it: Python's AttributeError escapes.
            raise AttributeError(f"'{type(for_each).__name__}' object has no attribute 'items'")
        if not for_each:
            # Heat unpacks the map's items into two tuples; Python's words for an empty one.
            raise ValueError("not enough values to unpack (expected 2, got 0)")

        placeholders = list(for_each)
        value_lists: list[Iterable[Any]] = []
        lengths = set()
        for values in for_each.values():
            # A null list (an attribute not yet known) counts as empty.
            if values is None:
                value_lists.append([])
                continue
            self._check_values(values)
            value_lists.append(values)
            lengths.add(len(values))
        if not self.permutations and len(lengths) > 1:
            raise ValueError(f"For {self.name}, the length of for_each values should be equal "
                             "if no nested loop.")

        # Functions in the template are resolved before any placeholder is replaced.
        template = resolve(self.args["template"], resolver)
        # Each copy is at least as large as the template (2 for the list item), so the
        # result's size is known to be over budget before any copy is made.
        counts = [len(values) if isinstance(values, Sized) else 0 for values in value_lists]
        copies = math.prod(counts) if self.permutations else min(counts, default=0)
        budgets.expect(copies * (2 + budgets.size_of(template, budgets.current().max_value_size)), self.name)
        # Zipped, a null list (empty) makes the result empty, as in Heat.
        combinations: Iterable[tuple[Any, ...]] = (
            itertools.product(*value_lists) if self.permutations else zip(*value_lists, strict=False))
        return [_replace(placeholders, combination, template) for combination in combinations]


def _replace(placeholders: list[Any], values: tuple[Any, ...], template: Any) -> Any:
    if isinstance(template, str):
        # One after the other, so a value may itself be matched by a later placeholder.
        for placeholder, value in zip(placeholders, values, strict=True):
            template = template.replace(placeholder, value)
        return template
    if isinstance(template, Sequence):
        return [_replace(placeholders, values, item) for item in template]
    if isinstance(template, Mapping):
        return {_replace(placeholders, values, key): _replace(placeholders, values, value)
                for key, value in template.items()}
    return template


class RepeatWithMap(Repeat):
    """Make a list with one copy of a template per item of a list (or key of a map), placeholders replaced."""

    def _check_values(self, values: Any) -> None:
        if isinstance(values, str) or not isinstance(values, (Sequence, Mapping, Function)):
            raise TypeError(f'The values of the "for_each" argument to "{self.name}" '
                            "must be lists or maps")


class RepeatWithNestedLoop(RepeatWithMap):
    """Make a list of copies of a template over lists or map keys, as all combinations or zipped."""

    def check_args(self) -> None:
        super().check_args()
        permutations = self.args.get("permutations", True)
        if not isinstance(permutations, bool):
            raise TypeError(f'"permutations" should be boolean type for {self.name} function.')
        self.permutations = permutations

    def _check_values(self, values: Any) -> None:
        if self.permutations:
            super()._check_values(values)
        else:
            # Map keys have no order to zip by, so only lists are allowed then.
            Repeat._check_values(self, values)
