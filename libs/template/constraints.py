"""Parameter constraints: their kinds, how templates declare them, how values are checked.

A constraint check follows Heat's contract: it returns quietly, raises
``ValueError`` whose text is the user-visible failure (the constraint's
``description`` when it has one, else Heat's default wording), or lets a
Python ``TypeError`` escape where Heat lets one escape (``len()`` of a number,
a pattern matched against a map). Callers decide what those become, exactly
as Heat's parameter code does.

Custom constraints (``custom_constraint: ip_addr``) are looked up in a
:class:`CustomConstraints` the caller passes in; nothing here is global. The
registry and the constraints Heat ships without cloud services live in
:mod:`libs.template.custom_constraints`.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol

from libs.template.errors import InvalidSchemaError, UnhandledPythonError

ParamType = Literal["string", "number", "comma_delimited_list", "json", "boolean"]

# oslo's strict boolean spellings (matched after strip() and lower()).
_TRUE = ("1", "t", "true", "on", "y", "yes")
_FALSE = ("0", "f", "false", "off", "n", "no")
_ACCEPTABLE = ", ".join(f"'{s}'" for s in sorted(_TRUE + _FALSE))


def parse_bool(value: Any) -> bool:
    """Heat's strict bool_from_string: JSON booleans, and the spellings above in any case."""
    if isinstance(value, bool):
        return value
    text = value if isinstance(value, str) else str(value)
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"Unrecognized value '{text}', acceptable values are: {_ACCEPTABLE}")


def to_number(value: Any) -> Any:
    """Heat's str_to_num: numbers (booleans too) pass through, "1" -> 1, "1.5" -> 1.5.

    Python's own int()/float() errors are the user-visible messages
    (``could not convert string to float: 'abc'``), so they are left alone.
    """
    if isinstance(value, numbers.Number):
        return value
    try:
        return int(value)
    except ValueError:
        return float(value)


def to_schema_type(value: Any, param_type: ParamType, type_name: str) -> Any:
    """How AllowedValues compares: both sides converted to the parameter's type."""
    try:
        if param_type == "number":
            return to_number(value)
        if param_type == "string":
            return str(value)
        if param_type == "boolean":
            return parse_bool(str(value))
    except ValueError:
        raise ValueError(f'Value "{value}" is invalid for data type "{type_name}".') from None
    return value


class CustomConstraints(Protocol):
    """What checking a ``custom_constraint`` needs (:class:`CustomConstraintRegistry`)."""

    def failure(self, name: Any, value: Any) -> str | None:
        """None if ``value`` satisfies the named constraint, else Heat's failure message."""


_NUMERIC = frozenset({"number"})


@dataclasses.dataclass(frozen=True)
class Range:
    min: Any = None
    max: Any = None
    description: Any = None

    kind: ClassVar[str] = "Range"
    key: ClassVar[str] = "range"
    valid_types: ClassVar[frozenset[str]] = _NUMERIC

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        number = to_number(value)
        if (self.min is not None and number < self.min) or (self.max is not None and number > self.max):
            return f"{value} is out of range (min: {self.min}, max: {self.max})"
        return None


@dataclasses.dataclass(frozen=True)
class Length:
    min: Any = None
    max: Any = None
    description: Any = None

    kind: ClassVar[str] = "Length"
    key: ClassVar[str] = "length"
    # Heat lets json parameters have a length (of the map or list) too.
    valid_types: ClassVar[frozenset[str]] = frozenset({"string", "comma_delimited_list", "json"})

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        length = len(value)
        if (self.min is not None and length < self.min) or (self.max is not None and length > self.max):
            return f"length ({length}) is out of range (min: {self.min}, max: {self.max})"
        return None


@dataclasses.dataclass(frozen=True)
class Modulo:
    step: Any
    offset: Any
    description: Any = None

    kind: ClassVar[str] = "Modulo"
    key: ClassVar[str] = "modulo"
    valid_types: ClassVar[frozenset[str]] = _NUMERIC

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        if to_number(value) % self.step != self.offset:
            return f"{value} is not a multiple of {self.step} with an offset of {self.offset}"
        return None


@dataclasses.dataclass(frozen=True)
class AllowedValues:
    allowed: tuple[Any, ...]
    description: Any = None
    # Ember's own values beside Heat's (NATS_SIGNAL): accepted, and shown in the type's schema, but
    # not listed in the refusal, which stays Heat's word for word.
    extensions: tuple[Any, ...] = ()

    kind: ClassVar[str] = "AllowedValues"
    key: ClassVar[str] = "allowed_values"
    valid_types: ClassVar[frozenset[str]] = frozenset(
        {"string", "number", "boolean", "comma_delimited_list"})

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        if isinstance(value, list):
            # Items are compared as they are: list items are strings, so
            # allowed_values: [1, 2] never admits "1,2" (Heat does the same).
            ok = all(item in self.allowed or item in self.extensions for item in value)
        else:
            allowed = tuple(to_schema_type(a, param_type, type_name)
                            for a in (*self.allowed, *self.extensions))
            ok = to_schema_type(value, param_type, type_name) in allowed
        if ok:
            return None
        listed = ", ".join(json.dumps(a) for a in self.allowed)
        return f"{json.dumps(value)} is not an allowed value [{listed}]"


@dataclasses.dataclass(frozen=True)
class AllowedPattern:
    pattern: str
    description: Any = None
    compiled: re.Pattern[str] = dataclasses.field(init=False, repr=False, compare=False)

    kind: ClassVar[str] = "AllowedPattern"
    key: ClassVar[str] = "allowed_pattern"
    valid_types: ClassVar[frozenset[str]] = frozenset({"string"})

    def __post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            # Heat lets the re.error escape: HTTP 500 named "error".
            raise UnhandledPythonError("error", str(exc)) from None
        object.__setattr__(self, "compiled", compiled)

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        if not isinstance(value, str):
            raise TypeError(f"expected string or bytes-like object, got '{type(value).__name__}'")
        # match() plus an end check, not fullmatch(): with "a|ab", "ab" fails in Heat.
        found = self.compiled.match(value)
        if found is not None and found.end() == len(value):
            return None
        return f'"{value}" does not match pattern "{self.pattern}"'


@dataclasses.dataclass(frozen=True)
class CustomConstraint:
    name: Any
    description: Any = None

    kind: ClassVar[str] = "CustomConstraint"
    key: ClassVar[str] = "custom_constraint"
    valid_types: ClassVar[frozenset[str]] = frozenset(
        {"string", "number", "boolean", "comma_delimited_list"})

    def failure(self, value: Any, param_type: ParamType, type_name: str,
                custom: CustomConstraints | None) -> str | None:
        # An unknown name is not an error until a value is checked, and template
        # defaults are never checked against custom constraints: so POST /validate
        # accepts `custom_constraint: no_such_thing`, and create fails with
        # '"v" does not validate no_such_thing (constraint not found)'.
        if custom is None:
            return f'"{value}" does not validate {self.name} (constraint not found)'
        return custom.failure(self.name, value)


Constraint = Range | Length | Modulo | AllowedValues | AllowedPattern | CustomConstraint


def check(constraint: Constraint, value: Any, param_type: ParamType, type_name: str,
          custom: CustomConstraints | None = None) -> None:
    """Raise ValueError with the user-visible message if ``value`` breaks ``constraint``.

    Conversion errors (``could not convert string to float``) surface as they
    are, even when the constraint has a description: Heat only substitutes the
    description for the constraint's own verdict.
    """
    message = constraint.failure(value, param_type, type_name, custom)
    if message is not None:
        raise ValueError(str(constraint.description) if constraint.description else message)


def check_applicable(constraint: Constraint, param_type: ParamType, type_name: str) -> None:
    """InvalidSchemaError when the constraint kind does not apply to the parameter's type."""
    if param_type not in constraint.valid_types:
        raise InvalidSchemaError(f"{constraint.kind} constraint invalid for {type_name}")


# ---- building constraints, with Heat's checks and messages --------------------------------------

def _number_arg(raw: Mapping[Any, Any], key: str) -> Any:
    value = raw.get(key)
    if value is None:
        return None
    try:
        return to_number(value)
    except (ValueError, TypeError) as exc:
        # Heat does not catch these: a bare ValueError (400) or TypeError (500).
        raise UnhandledPythonError(type(exc).__name__, str(exc)) from None


def make_range(low: Any, high: Any, description: Any) -> Range:
    for bound in (low, high):
        if not isinstance(bound, (int, float, type(None))):
            raise InvalidSchemaError("min/max must be numeric")
    if low is None and high is None:
        raise InvalidSchemaError("A range constraint must have a min value and/or a max value specified.")
    return Range(low, high, description)


def make_length(low: Any, high: Any, description: Any) -> Length:
    if low is None and high is None:
        raise InvalidSchemaError("A length constraint must have a min value and/or a max value specified.")
    make_range(low, high, description)
    for bound in (low, high):
        if not isinstance(bound, (int, type(None))):
            raise InvalidSchemaError("min/max length must be integral")
    return Length(low, high, description)


def make_modulo(step: Any, offset: Any, description: Any) -> Modulo:
    if step is None or offset is None:
        raise InvalidSchemaError(
            "A modulo constraint must have a step value and an offset value specified.")
    for arg in (step, offset):
        if not isinstance(arg, (int, float)):
            raise InvalidSchemaError("step/offset must be numeric")
        try:
            whole = int(arg)
        except (ValueError, OverflowError) as exc:  # nan / inf: Heat lets these escape
            raise UnhandledPythonError(type(exc).__name__, str(exc)) from None
        if whole != arg:
            raise InvalidSchemaError("step/offset must be integer")
    if int(step) == 0:
        raise InvalidSchemaError("step cannot be 0.")
    if abs(int(offset)) >= abs(int(step)):
        raise InvalidSchemaError("offset must be smaller (by absolute value) than step.")
    if int(step) * int(offset) < 0:
        raise InvalidSchemaError("step and offset must be both positive or both negative.")
    # The values are kept as written (2.0 stays 2.0) because messages show them.
    return Modulo(step, offset, description)


def make_allowed_values(allowed: Any, description: Any) -> AllowedValues:
    if not isinstance(allowed, Sequence) or isinstance(allowed, str):
        raise InvalidSchemaError("AllowedValues must be a list")
    return AllowedValues(tuple(allowed), description)


def make_allowed_pattern(pattern: Any, description: Any) -> AllowedPattern:
    if not isinstance(pattern, str):
        raise InvalidSchemaError("AllowedPattern must be a string")
    return AllowedPattern(pattern, description)


def check_keys(raw: Any, allowed: Sequence[str], entity: str) -> Mapping[Any, Any]:
    """Heat's mapping check, shared by parameter and constraint definitions."""
    if not isinstance(raw, Mapping):
        raise InvalidSchemaError(f"Invalid {entity}, expected a mapping")
    for key in raw:
        if key not in allowed:
            raise InvalidSchemaError(f"Invalid key '{key}' for {entity}")
    return raw


_HOT_KINDS = ("description", "length", "range", "modulo", "allowed_values", "allowed_pattern",
              "custom_constraint")
_BOUNDS = ("min", "max")


def _hot_range(cdef: Any, description: Any) -> Constraint:
    bounds = check_keys(cdef, _BOUNDS, "range constraint")
    return make_range(_number_arg(bounds, "min"), _number_arg(bounds, "max"), description)


def _hot_length(cdef: Any, description: Any) -> Constraint:
    bounds = check_keys(cdef, _BOUNDS, "length constraint")
    return make_length(_number_arg(bounds, "min"), _number_arg(bounds, "max"), description)


def _hot_modulo(cdef: Any, description: Any) -> Constraint:
    args = check_keys(cdef, ("step", "offset"), "modulo constraint")
    return make_modulo(_number_arg(args, "step"), _number_arg(args, "offset"), description)


_HOT_BUILDERS: tuple[tuple[str, Callable[[Any, Any], Constraint]], ...] = (
    ("range", _hot_range),
    ("length", _hot_length),
    ("allowed_values", make_allowed_values),
    ("allowed_pattern", make_allowed_pattern),
    ("custom_constraint", CustomConstraint),
)


def parse_hot_constraints(param_name: Any, raw: Any, *, with_modulo: bool) -> tuple[Constraint, ...]:
    """A HOT parameter's ``constraints:`` list.

    Only the first kind present in an item counts (in Heat's order: modulo,
    range, length, allowed_values, allowed_pattern, custom_constraint); the
    others are silently ignored. Before 2017-02-24 ``modulo`` passes the key
    check but nothing builds it, hence Heat's "No constraint expressed".
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidSchemaError(
            f"Invalid parameter constraints for parameter {param_name}, expected a list")
    builders = (("modulo", _hot_modulo), *_HOT_BUILDERS) if with_modulo else _HOT_BUILDERS
    parsed: list[Constraint] = []
    for item in raw:
        definition = check_keys(item, _HOT_KINDS, "parameter constraints")
        for key, build in builders:
            if key in definition:
                parsed.append(build(definition[key], definition.get("description")))
                break
        else:
            raise InvalidSchemaError("No constraint expressed")
    return tuple(parsed)


def parse_cfn_constraints(schema: Mapping[Any, Any]) -> tuple[Constraint, ...]:
    """CFN's flat keys; every constraint shares the one ConstraintDescription."""
    description = schema.get("ConstraintDescription")
    parsed: list[Constraint] = []
    if "MinValue" in schema or "MaxValue" in schema:
        parsed.append(make_range(_number_arg(schema, "MinValue"), _number_arg(schema, "MaxValue"),
                                 description))
    if "MinLength" in schema or "MaxLength" in schema:
        parsed.append(make_length(_number_arg(schema, "MinLength"), _number_arg(schema, "MaxLength"),
                                  description))
    if "AllowedValues" in schema:
        parsed.append(make_allowed_values(schema["AllowedValues"], description))
    if "AllowedPattern" in schema:
        parsed.append(make_allowed_pattern(schema["AllowedPattern"], description))
    return tuple(parsed)
