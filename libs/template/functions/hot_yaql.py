"""HOT's ``yaql``: evaluate a YAQL expression with the same library and limits as Heat."""

from __future__ import annotations

# yaql reaches collections.abc through ``import collections`` alone, which works
# only once something has imported collections.abc.
import collections.abc
import functools
from typing import Any

import yaql
from yaql.language import exceptions as yaql_exceptions

from libs.template.functions.base import Function, Resolver, resolve

# Heat's [yaql] defaults: at most 200 items in a collection, 10000 bytes of memory.
LIMIT_ITERATORS = 200
MEMORY_QUOTA = 10000

_EXAMPLE = ("{name}:\n              expression: $.data.var1.sum()\n              data:\n"
            "                var1: [3, 2, 1]")


class CollectionTooLargeException(ValueError):
    """yaql's, as a ValueError so it fails where the function sits; Heat shows the name."""


class MemoryQuotaExceededException(ValueError):
    """yaql's, as a ValueError so it fails where the function sits; Heat shows the name."""


@functools.cache
def _engine() -> tuple[Any, Any]:
    """The parser and root context, made once as Heat does: both are costly to build."""
    options = {"yaql.limitIterators": LIMIT_ITERATORS, "yaql.memoryQuota": MEMORY_QUOTA}
    return yaql.YaqlFactory().create(options), yaql.create_context()


class Yaql(Function):
    """Evaluate a YAQL expression on the given data."""

    def check_args(self) -> None:
        if not isinstance(self.args, collections.abc.Mapping):
            raise TypeError(f'Arguments to "{self.name}" must be a map.')
        if "expression" not in self.args or set(self.args) - {"expression", "data"}:
            example = _EXAMPLE.format(name=self.name)
            raise KeyError(f'"{self.name}" syntax should be {example}')

    def validate(self) -> None:
        super().validate()
        expression = self.args["expression"]
        if not isinstance(expression, Function):
            self._parse(expression)

    def _parse(self, expression: Any) -> Any:
        if not isinstance(expression, str):
            raise TypeError(f'The "expression" argument to {self.name} must contain a string.')
        parser, _ = _engine()
        try:
            return parser(expression)
        except yaql_exceptions.YaqlException as exc:
            raise ValueError(f"Bad expression {exc}.") from None

    def result(self, resolver: Resolver) -> Any:
        statement = self._parse(resolve(self.args["expression"], resolver))
        data = resolve(self.args.get("data", {}), resolver)
        _, context = _engine()
        # As Heat: yaql's own errors (NoMethodRegisteredException...) escape as they are;
        # their class names show where Heat names the error. Its limits are the user's
        # fault, and fail where the function sits, with yaql's words, as Heat's do.
        try:
            return statement.evaluate({"data": data}, context.create_child_context())
        except yaql_exceptions.CollectionTooLargeException as exc:
            raise CollectionTooLargeException(str(exc)) from None
        except yaql_exceptions.MemoryQuotaExceededException as exc:
            raise MemoryQuotaExceededException(str(exc)) from None
