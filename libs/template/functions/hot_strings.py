"""HOT functions that build or take apart strings: list_join, str_replace*, str_split, digest."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from libs.template import budgets
from libs.template.functions.base import Function, Resolver, resolve


def json_text(value: Any) -> str:
    """JSON as Heat writes it into strings: sorted keys, ``", "``/``": "``, non-ASCII escaped."""
    return json.dumps(value, sort_keys=True)


def _no_attribute(value: Any, attribute: str) -> AttributeError:
    # Where Heat calls a method on a value of the wrong type, Python's AttributeError
    # escapes; its class name shows where Heat names the error (validation), so keep both.
    return AttributeError(f"'{type(value).__name__}' object has no attribute '{attribute}'")


class Join(Function):
    """Join a list of strings with a delimiter."""

    def check_args(self) -> None:
        example = f'"{self.name}" : [ " ", [ "str1", "str2"]]'
        message = f'Incorrect arguments to "{self.name}" should be: {example}'
        if not isinstance(self.args, list):
            raise TypeError(message)
        if len(self.args) != 2:
            raise ValueError(message)

    def result(self, resolver: Resolver) -> Any:
        strings = resolve(self.args[1], resolver)
        if strings is None:
            strings = []
        if isinstance(strings, str) or not isinstance(strings, Sequence):
            raise TypeError(f'"{self.name}" must operate on a list')
        delimiter = self._delimiter(resolver)

        def text(item: Any) -> str:
            if item is None:
                return ""
            if not isinstance(item, str):
                raise TypeError(f"Items to join must be strings not {repr(item)[:200]}")
            return item

        # A long delimiter (a file) between many short items is the join's own growth.
        budgets.expect(len(delimiter) * (len(strings) - 1), self.name)
        return delimiter.join(text(item) for item in strings)

    def _delimiter(self, resolver: Resolver) -> str:
        delimiter = resolve(self.args[0], resolver)
        if not isinstance(delimiter, str):
            raise TypeError(f'"{self.name}" delimiter must be a string')
        return delimiter


class JoinMultiple(Join):
    """Join one or more lists of strings with a delimiter; maps and lists become JSON."""

    def check_args(self) -> None:
        example = f'"{self.name}" : [ " ", [ "str1", "str2"] ...]'
        message = f'Incorrect arguments to "{self.name}" should be: {example}'
        if not isinstance(self.args, list):
            raise TypeError(message)
        if len(self.args) < 2:
            raise ValueError(message)

    def result(self, resolver: Resolver) -> Any:
        strings: list[Any] = []
        for items in resolve(self.args[1:], resolver):
            # Any empty value (null, [], "", {}, 0) is skipped, not only null.
            if not items:
                continue
            if isinstance(items, str) or not isinstance(items, Sequence):
                raise TypeError(f'"{self.name}" must operate on a list')
            strings.extend(items)
        delimiter = self._delimiter(resolver)

        def text(item: Any) -> str:
            if item is None:
                return ""
            if isinstance(item, str):
                return item
            if isinstance(item, (Mapping, Sequence)):
                try:
                    return json_text(item)
                except TypeError:
                    raise TypeError("Items to join must be string, map or list. "
                                    f"{repr(item)[:200]} failed json serialization") from None
            raise TypeError(f"Items to join must be string, map or list not {repr(item)[:200]}")

        # A long delimiter (a file) between many short items is the join's own growth.
        budgets.expect(len(delimiter) * (len(strings) - 1), self.name)
        return delimiter.join(text(item) for item in strings)


class Replace(Function):
    """Substitute values for placeholders in a string, longest placeholder first."""

    _strict = False
    _allow_empty = True

    def check_args(self) -> None:
        if not isinstance(self.args, Mapping):
            raise TypeError(f'Arguments to "{self.name}" must be a map')
        if "params" not in self.args or "template" not in self.args:
            example = (f"{self.name}:\n              template: This is var1 template var2\n"
                       "              params:\n                var1: a\n                var2: string")
            raise KeyError(f'"{self.name}" syntax should be {example}')
        if not isinstance(self.args["params"], (Mapping, Function)):
            raise TypeError(f'"{self.name}" parameters must be a mapping')

    def result(self, resolver: Resolver) -> Any:
        template = resolve(self.args["template"], resolver)
        mapping = resolve(self.args["params"], resolver)
        unreplaced = set(mapping) if self._strict else set()
        if not isinstance(template, str):
            raise TypeError(f'"{self.name}" template must be a string')
        if not isinstance(mapping, Mapping):
            raise TypeError(f'"{self.name}" params must be a map')

        # Longest first, ties in lexical order; each piece left between the
        # matches of one key is searched for the shorter keys only, so a
        # substituted value is never searched again.
        keys = sorted(sorted(mapping), key=len, reverse=True)
        text = self._substitute([template], keys, mapping, unreplaced)[0]
        if unreplaced:
            missing = ",".join(sorted(sorted(unreplaced), key=len, reverse=True))
            raise ValueError(f"The following params were not found in the template: {missing}")
        return text

    def _substitute(self, pieces: list[str], keys: list[Any], mapping: Mapping[Any, Any],
                    unreplaced: set[Any]) -> list[str]:
        if not keys:
            return pieces
        key = keys[0]
        if not isinstance(key, str):
            raise TypeError(f'"{self.name}" param placeholders must be strings')
        value = self._replacement(mapping[key], key)
        out = []
        for piece in pieces:
            parts = piece.split(key)
            # Refused before the join builds it: a short template of many placeholders
            # and a long value make a result of their product.
            budgets.expect(len(piece) + len(value) * (len(parts) - 1), self.name)
            if len(parts) > 1:
                unreplaced.discard(key)
            out.append(value.join(self._substitute(parts, keys[1:], mapping, unreplaced)))
        return out

    def _replacement(self, value: Any, param: str) -> str:
        if value is None:
            return ""
        if not isinstance(value, (str, int, float, bool)):
            raise TypeError(f'"{self.name}" params must be strings or numbers, '
                            f"param {param} is not valid")
        return str(value)


class ReplaceJson(Replace):
    """Substitute values for placeholders in a string; maps and lists are substituted as JSON."""

    def _replacement(self, value: Any, param: str) -> str:
        if value is None:
            return self._empty("", param)
        if not isinstance(value, (str, int, float, bool)):
            if not isinstance(value, (Mapping, Sequence)):
                raise TypeError(f'"{self.name}" params must be strings, numbers, list or map.')
            if len(value) == 0:
                self._empty("", param)
            try:
                return json_text(value)
            except TypeError:
                raise TypeError(f'"{self.name}" params must be strings, numbers, list or map. '
                                f"Failed to json serialize {value}") from None
        text = str(value)
        return text if text else self._empty(text, param)

    def _empty(self, text: str, param: str) -> str:
        if not self._allow_empty:
            raise ValueError(f"{self.name} has an undefined or empty value for param {param}, "
                             "must be a defined non-empty value")
        return text


class ReplaceJsonStrict(ReplaceJson):
    """Like str_replace, but fail if a placeholder does not occur in the string."""

    _strict = True


class ReplaceJsonVeryStrict(ReplaceJsonStrict):
    """Like str_replace_strict, but also fail if a value is null or empty."""

    _allow_empty = False


class StrSplit(Function):
    """Split a string on a delimiter into a list, or return one item of it by index."""

    def _example(self) -> str:
        return f'"{self.name}" : [ ",", "apples,pears", <index>]'

    def check_args(self) -> None:
        if isinstance(self.args, (str, Mapping)):
            raise TypeError(f'Incorrect arguments to "{self.name}" should be: {self._example()}')

    def result(self, resolver: Resolver) -> Any:
        args = resolve(self.args, resolver)
        if isinstance(args, Mapping):
            raise KeyError(0)  # Heat pops item 0 off whatever it got
        if not isinstance(args, list) or len(args) < 2:
            raise ValueError(f'Incorrect arguments to "{self.name}" should be: {self._example()}')
        delimiter, text = args[0], args[1]
        if text is None:
            return None
        if not isinstance(text, str):
            raise _no_attribute(text, "split")
        parts = text.split(delimiter)
        if len(args) == 2:
            return parts
        try:
            index = int(args[2])
        except ValueError:
            raise ValueError(f'Incorrect index to "{self.name}" should be: {self._example()}') from None
        try:
            return parts[index]
        except IndexError:
            raise ValueError(f'Incorrect index to "{self.name}" should be between 0 and '
                             f"{len(parts) - 1}") from None


class Digest(Function):
    """Return the hex digest of a string under a hashlib algorithm (md5, sha256, sha512...)."""

    def result(self, resolver: Resolver) -> Any:
        args = resolve(self.args, resolver)
        if not (isinstance(args, list) and all(isinstance(a, str) for a in args)):
            raise TypeError(f'Argument to function "{self.name}" must be a list of strings')
        if len(args) != 2:
            raise ValueError(f'Function "{self.name}" usage: ["<algorithm>", "<value>"]')
        algorithm, value = args
        if algorithm.lower() not in hashlib.algorithms_available:
            raise ValueError(f"Algorithm must be one of {hashlib.algorithms_available}")
        digest = hashlib.new(algorithm)
        # Heat hashes the latin-1 bytes; other characters fail with Python's message.
        digest.update(value.encode("latin-1"))
        return digest.hexdigest()
