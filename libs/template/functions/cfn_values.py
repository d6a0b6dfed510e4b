"""CFN functions that compute a value from their arguments alone.

Argument shapes are checked the way Heat checks them, by unpacking: a
two-character string or a two-key map passes ``[a, b]`` unpacking, and a
non-iterable fails with Python's own ``cannot unpack non-iterable ...``.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from libs.template import budgets
from libs.template.functions.base import HEAT_CFN_MODULE, Function, Resolver, resolve

# Heat's hint for a malformed Fn::MemberListToMap, whitespace included; it names
# Fn::MemberListToMap whatever the function is called.
_MEMBER_LIST_EXAMPLE = (
    "\n            {'Fn::MemberListToMap': ['Name', 'Value',\n"
    "                                     ['.member.0.Name=key',\n"
    "                                      '.member.0.Value=door']]}\n            "
)

# AWS query-API member lists: ``.member.<n>.<field>=<value>``.
_MEMBER = re.compile(r"\.member\.([0-9]+)\.(.*)")


class Select(Function):
    """One item of a list (by index) or of a map (by key); "" when there is none."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        try:
            self._index, self._collection = self.args
        except ValueError:
            raise ValueError(f'Arguments to "{self.name}" must be of the form '
                             "[index, collection]") from None

    def result(self, resolver: Resolver) -> Any:
        index = resolve(self._index, resolver)
        collection = resolve(self._collection, resolver)
        if collection == "":
            # What functions give for values not available yet: pass it on.
            return ""
        if isinstance(collection, str):
            try:
                collection = json.loads(collection)
            except ValueError as exc:
                raise ValueError(f'"{self.name}": {exc}') from None
        if isinstance(collection, Mapping):
            if not isinstance(index, str):
                raise TypeError(f'Index to "{self.name}" must be a string')
            return collection.get(index, "")
        with contextlib.suppress(ValueError, TypeError):
            index = int(index)
        if isinstance(collection, Sequence) and not isinstance(collection, str):
            if not isinstance(index, int):
                raise TypeError(f'Index to "{self.name}" must be an integer')
            try:
                return collection[index]
            except IndexError:
                return ""
        if collection is None:
            return ""
        raise TypeError(f"Arguments to {self.name} not fully resolved")


class Join(Function):
    """The strings of a list joined with a delimiter (null items count as "")."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        message = (f'Incorrect arguments to "{self.name}" should be: '
                   f'"{self.name}" : [ " ", [ "str1", "str2"]]')
        if not isinstance(self.args, list):
            raise TypeError(message)
        try:
            self._delimiter, self._items = self.args
        except ValueError:
            raise ValueError(message) from None

    def result(self, resolver: Resolver) -> Any:
        items = resolve(self._items, resolver)
        if items is None:
            items = []
        if isinstance(items, str) or not isinstance(items, Sequence):
            raise TypeError(f'"{self.name}" must operate on a list')
        delimiter = resolve(self._delimiter, resolver)
        if not isinstance(delimiter, str):
            raise TypeError(f'"{self.name}" delimiter must be a string')
        budgets.expect(len(delimiter) * (len(items) - 1), self.name)
        return delimiter.join(_join_item(item) for item in items)


def _join_item(item: Any) -> str:
    if item is None:
        return ""
    if not isinstance(item, str):
        raise TypeError(f"Items to join must be strings not {repr(item)[:200]}")
    return item


class Split(Function):
    """A string cut into a list at each occurrence of a delimiter."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        # Heat's hint, unbalanced bracket included.
        message = (f'Incorrect arguments to "{self.name}" should be: '
                   f'"{self.name}" : [ ",", "str1,str2"]]')
        if isinstance(self.args, (str, Mapping)):
            raise TypeError(message)
        try:
            self._delimiter, self._string = self.args
        except ValueError:
            raise ValueError(message) from None

    def result(self, resolver: Resolver) -> Any:
        string = resolve(self._string, resolver)
        # The delimiter is never resolved: a function there is an error.
        if not isinstance(self._delimiter, str):
            raise TypeError(f"Delimiter for {self.name} must be string")
        if not isinstance(string, str):
            raise TypeError(f"String to split must be string; got {type(string)}")
        return string.split(self._delimiter)


class Replace(Function):
    """A string with each key of a map replaced by its value, longest keys first."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        example = (f'{{"{self.name}": [ {{"$var1": "foo", "%var2%": "bar"}}, '
                   '"$var1 is %var2%"]}')
        message = f'Incorrect arguments to "{self.name}" should be: {example}'
        if isinstance(self.args, (str, Mapping)):
            raise TypeError(message)
        try:
            self._params, self._template = self.args
        except ValueError:
            raise ValueError(message) from None
        if not isinstance(self._params, (Mapping, Function)):
            raise TypeError(f'"{self.name}" parameters must be a mapping')

    def result(self, resolver: Resolver) -> Any:
        template = resolve(self._template, resolver)
        params = resolve(self._params, resolver)
        if not isinstance(template, str):
            raise TypeError(f'"{self.name}" template must be a string')
        if not isinstance(params, Mapping):
            raise TypeError(f'"{self.name}" params must be a map')
        # Longest first; equal lengths in lexical order. Non-string keys fail in
        # the sort itself, with Python's message, as they do in Heat.
        keys = sorted(sorted(params), key=len, reverse=True)
        values: dict[str, str] = {}
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f'"{self.name}" param placeholders must be strings')
            values[key] = self._replacement(params[key], key)
        return _substitute(template, keys, values, self.name)

    def _replacement(self, value: Any, key: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float, bool)):
            raise TypeError(f'"{self.name}" params must be strings or numbers, '
                            f"param {key} is not valid")
        return str(value)


def _substitute(text: str, keys: Sequence[str], values: Mapping[str, str], what: str) -> str:
    # Split on the first key and substitute the rest inside each piece, so an
    # inserted value is never scanned again.
    if not keys:
        return text
    key, rest = keys[0], keys[1:]
    pieces = text.split(key)
    budgets.expect(len(text) + len(values[key]) * (len(pieces) - 1), what)
    return values[key].join(_substitute(piece, rest, values, what) for piece in pieces)


class Base64(Function):
    """The string itself: Heat takes user data as plain text and does not encode it."""

    heat_module = HEAT_CFN_MODULE

    def result(self, resolver: Resolver) -> Any:
        value = resolve(self.args, resolver)
        if not isinstance(value, str):
            raise TypeError(f'"{self.name}" argument must be a string')
        return value


class MemberListToMap(Function):
    """A map built from an AWS member list (``.member.<n>.<Name|Value>=...``)."""

    heat_module = HEAT_CFN_MODULE

    def check_args(self) -> None:
        try:
            self._key_name, self._value_name, self._members = self.args
        except ValueError:
            raise TypeError(f'Wrong Arguments try: "{_MEMBER_LIST_EXAMPLE}"') from None
        if not isinstance(self._key_name, str):
            raise TypeError(f"{self.name} Key Name must be a string")
        if not isinstance(self._value_name, str):
            raise TypeError(f"{self.name} Value Name must be a string")

    def result(self, resolver: Resolver) -> Any:
        members = resolve(self._members, resolver)
        if not isinstance(members, Iterable):
            raise TypeError("Member list must be a list")
        fields = dict(_member_field(item) for item in members)
        entries: dict[int, dict[str, Any]] = {}
        for name, value in fields.items():
            match = _MEMBER.match(name)
            if match:
                entries.setdefault(int(match.group(1)), {})[match.group(2)] = value
        ordered = (entries[index] for index in sorted(entries))
        return {entry[self._key_name]: entry[self._value_name] for entry in ordered
                if self._key_name in entry and self._value_name in entry}


def _member_field(item: Any) -> list[str]:
    if not isinstance(item, str):
        raise TypeError("Member list items must be strings")
    # A piece without "=" makes dict() fail with Python's message, as in Heat.
    return item.split("=", 1)

