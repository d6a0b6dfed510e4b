"""HOT functions over maps and lists: map_merge, map_replace, list_concat(_unique), filter, contains."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from libs.template.functions.base import Function, Resolver, resolve


def _json(value: Any) -> str:
    # Heat's jsonutils.dumps: plain json.dumps, turning what JSON lacks into lists or text.
    return json.dumps(value, default=lambda o: list(o) if isinstance(o, (set, frozenset)) else str(o))


class MapMerge(Function):
    """Merge maps; a key in a later map overrides the same key in an earlier one."""

    def result(self, resolver: Resolver) -> Any:
        maps = resolve(self.args, resolver)
        # A string is a sequence too: its characters then fail as non-maps.
        if not isinstance(maps, Sequence):
            example = f'"{self.name}" : [ {{ "key1": "val1" }}, {{ "key2": "val2" }} ]'
            raise TypeError(f'Incorrect arguments to "{self.name}" should be: {example}')
        merged: dict[Any, Any] = {}
        for item in maps:
            if item is None:
                continue
            if not isinstance(item, Mapping):
                raise TypeError("Incorrect arguments: Items to merge must be maps. "
                                f"{repr(item)[:200]} is type {type(item)} instead of a dict")
            merged.update(item)
        return merged


class MapReplace(Function):
    """Rename the keys and replace the values of a map."""

    def _example(self) -> str:
        return (f'"{self.name}" : [ {{ "key1": "val1" }}, '
                '{"keys": {"key1": "key2"}, "values": {"val1": "val2"}}]')

    def _malformed(self) -> str:
        return f'Incorrect arguments to "{self.name}" should be: {self._example()}'

    def _map(self, value: Any) -> Mapping[Any, Any]:
        if value is None:
            return {}
        if isinstance(value, Mapping):
            return value
        raise TypeError(f'Incorrect arguments: to "{self.name}", arguments must be a list of maps. '
                        f"Example:  {self._example()}")

    def result(self, resolver: Resolver) -> Any:
        args = resolve(self.args, resolver)
        if isinstance(args, Mapping):
            raise KeyError(0)  # Heat pops item 0 off whatever it got
        if not isinstance(args, list) or not args:
            raise TypeError(self._malformed())
        source = self._map(args[0])
        if len(args) < 2:
            raise TypeError(self._malformed())
        replacements = self._map(args[1])
        if len(args) > 2:
            raise TypeError(self._malformed())
        if any(key not in ("keys", "values") for key in replacements):
            raise ValueError(self._malformed())

        new_keys = self._map(replacements.get("keys", {}))
        new_values = self._map(replacements.get("values", {}))
        out: dict[Any, Any] = {}
        for key, value in source.items():
            new_key = new_keys.get(key)
            if new_key is None:
                new_key = key
            elif new_key in source and new_key != key:
                raise ValueError(f"key replacement {new_key} collides with a key in the input map")
            elif new_key in out:
                raise ValueError(f"key replacement {new_key} collides with a key in the output map")
            try:
                out[new_key] = new_values.get(value, value)
            except TypeError:  # an unhashable value is never replaced
                out[new_key] = value
        return out


class ListConcat(Function):
    """Concatenate lists."""

    _unique = False

    def result(self, resolver: Resolver) -> Any:
        lists = resolve(self.args, resolver)
        if isinstance(lists, str) or not isinstance(lists, Sequence):
            example = f'"{self.name}" : [ [ <value 1>, <value 2> ], [ <value 3>, <value 4> ] ]'
            raise TypeError(f'Incorrect arguments to "{self.name}" should be: {example}')
        out: list[Any] = []
        for items in lists:
            if items is None:
                continue
            if isinstance(items, str) or not isinstance(items, Sequence):
                raise TypeError("Incorrect arguments: Items to concat must be lists. "
                                f"{_json(lists)} contains an item that is not a list: {_json(items)}")
            out.extend(items)
        if not self._unique:
            return out
        # By equality, so equal maps and lists are duplicates too.
        unique: list[Any] = []
        for item in out:
            if item not in unique:
                unique.append(item)
        return unique


class ListConcatUnique(ListConcat):
    """Concatenate lists, keeping only the first of equal items."""

    _unique = True


class Filter(Function):
    """Remove the given values from a list."""

    def check_args(self) -> None:
        if not isinstance(self.args, Sequence) or isinstance(self.args, str):
            raise TypeError(f'Argument to "{self.name}" must be a list')
        if len(self.args) != 2:
            raise ValueError(f'"{self.name}" expected 2 arguments of the form [values, sequence] '
                             f"but got {len(self.args)} arguments instead")

    def result(self, resolver: Resolver) -> Any:
        sequence = resolve(self.args[1], resolver)
        # Any empty sequence (null, "", {}) comes back as it is.
        if not sequence:
            return sequence
        if not isinstance(sequence, list):
            raise TypeError(f'"{self.name}" only works with lists')
        values = resolve(self.args[0], resolver)
        if not values:
            return sequence
        if not isinstance(values, list):
            raise TypeError(f'"{self.name}" filters a list of values')
        return [item for item in sequence if item not in values]


class Contains(Function):
    """Whether a value is in a list (or a substring of a string)."""

    def check_args(self) -> None:
        if not self.args or not isinstance(self.args, list):
            example = f'"{self.name}" : [ "value1", [ "value1", "value2"]]'
            raise TypeError(f'Incorrect arguments to "{self.name}" should be: {example}')
        if len(self.args) != 2:
            raise ValueError(f'Arguments to "{self.name}" must be of the form: '
                             "[value1, [value1, value2]]")

    def result(self, resolver: Resolver) -> Any:
        value = resolve(self.args[0], resolver)
        sequence = resolve(self.args[1], resolver)
        if not isinstance(sequence, Sequence):
            raise TypeError(f'Second argument to "{self.name}" should be a sequence.')
        return value in sequence
