"""Resource property schemas, and turning a resource's resolved properties into typed values.

Heat's rules, which users see in their error messages, are kept exactly:

* every property in the schema gets a value: the one given, else the
  schema's default, else None (or ``Property <name> not assigned`` when it
  is required); an explicit ``null`` is *given*: it becomes the default, or
  the type's empty value (``''``, ``0``, ``False``, ``{}``, ``[]``), and never
  counts as missing;
* keys the schema does not know fail as ``Unknown Property <name>``, at every
  level of nested maps;
* each value is converted to its type (booleans accept only ``true`` and
  ``false`` in any case, integers go through ``int()``) and then checked
  against its constraints, in the schema's order; the first failure wins;
* a failure reads ``Property error: <resources>.<name>.<properties>.<path>: <message>``.

A value that cannot be known yet (while validating, the attribute of a
resource that does not exist) is passed as :data:`UNKNOWN`; it is neither
converted nor checked, exactly as Heat skips values that depend on resources
not yet created, and it stays :data:`UNKNOWN` in the result.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any, ClassVar, Final, Literal

from libs.template.constraints import (
    AllowedPattern,
    AllowedValues,
    Constraint,
    CustomConstraint,
    CustomConstraints,
    Length,
    Modulo,
    ParamType,
    Range,
    check,
    to_number,
)
from libs.template.custom_constraints import shared_defaults
from libs.template.errors import InvalidSchemaError, PathItem, StackValidationFailed, UnhandledPythonError

PropType = Literal["string", "integer", "number", "boolean", "map", "list", "any"]
SupportStatusName = Literal["SUPPORTED", "DEPRECATED", "UNSUPPORTED", "HIDDEN", "UNKNOWN"]

# Heat's spelling of each type, which its messages show ("invalid for data type "Integer"").
TYPE_NAMES: Final[dict[PropType, str]] = {
    "string": "String", "integer": "Integer", "number": "Number", "boolean": "Boolean",
    "map": "Map", "list": "List", "any": "Any",
}

# Which constraint kinds a property type admits; property types differ from parameter
# types, so Ember's constraint classes are reused for checking but not for this table.
_VALID_TYPES: Final[dict[type[Any], frozenset[str]]] = {
    Range: frozenset({"integer", "number"}),
    Length: frozenset({"string", "list", "map"}),
    Modulo: frozenset({"integer", "number"}),
    AllowedValues: frozenset({"string", "integer", "number", "boolean", "list"}),
    AllowedPattern: frozenset({"string"}),
    CustomConstraint: frozenset({"string", "integer", "number", "boolean", "list"}),
}

# How a property type maps onto the parameter types Ember's constraint checks understand.
_CHECK_AS: Final[dict[PropType, ParamType]] = {
    "string": "string", "integer": "number", "number": "number", "boolean": "boolean",
    "list": "comma_delimited_list", "map": "json", "any": "json",
}


class _Unknown:
    """The type of :data:`UNKNOWN`: one instance (copies and pickles included), a readable repr."""

    _instance: ClassVar[_Unknown | None] = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Final = _Unknown()
"""A property value not known until execution; validation passes over it."""


@dataclasses.dataclass(frozen=True)
class Unresolvable:
    """A property value whose functions failed to resolve (a ``get_file`` of a missing file...).

    Validation reports ``message`` as the property's error when it reads the
    value, as Heat reports a resolver's failure; a value never read (a key the
    schema does not know fails first, a type with no schema reads none) never fails.
    """

    message: str
    path: tuple[PathItem, ...] = ()


@dataclasses.dataclass(frozen=True)
class PropSchema:
    """One property's declaration (Heat's ``properties.Schema``).

    ``schema`` describes the contents of a ``list`` (one schema for every
    item) or of a ``map`` (a schema per key; other keys are then unknown).
    """

    type: PropType
    description: str | None = None
    default: Any = None
    required: bool = False
    constraints: tuple[Constraint, ...] = ()
    update_allowed: bool = False
    immutable: bool = False
    schema: PropSchema | Mapping[str, PropSchema] | None = None
    support_status: SupportStatusName = "SUPPORTED"
    # A provider template's property made from a json or comma_delimited_list parameter
    # takes what that parameter takes: a map property JSON text or a list, a list property text.
    allow_conversion: bool = False

    def __post_init__(self) -> None:
        # Heat checks a schema when it is declared; these are plugin bugs, raised at import.
        if self.type not in TYPE_NAMES:
            raise InvalidSchemaError(f"Invalid type ({self.type})")
        name = TYPE_NAMES[self.type]
        if isinstance(self.schema, PropSchema) and self.type != "list":
            raise InvalidSchemaError(f"Single schema valid only for List, not {name}")
        if isinstance(self.schema, Mapping) and self.type != "map":
            raise InvalidSchemaError(f"Schema valid only for List or Map, not {name}")
        for constraint in self.constraints:
            if self.type not in _VALID_TYPES[type(constraint)]:
                raise InvalidSchemaError(f"{type(constraint).__name__} constraint invalid for {name}")
        if self.update_allowed and self.immutable:
            raise InvalidSchemaError("Options UpdateAllowed and Immutable cannot both be True")
        if self.default is not None:
            # Defaults are checked against every constraint but custom ones (those may need a cloud).
            for constraint in self.constraints:
                if isinstance(constraint, CustomConstraint):
                    continue
                problem = _constraint_failure(self, constraint, self.default, None)
                if problem is not None:
                    raise InvalidSchemaError(f"Invalid default {self.default} ({problem})")

    @property
    def type_name(self) -> str:
        return TYPE_NAMES[self.type]


class _Invalid(Exception):
    """A failure inside one properties mapping; ``path`` is relative to that mapping."""

    def __init__(self, message: str, path: tuple[PathItem, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = path

    def under(self, key: PathItem) -> _Invalid:
        return _Invalid(self.message, (key, *self.path))


# What conversions and constraint checks may raise; Heat turns any of them into the
# property's error message (its resolver catches Exception and re-raises ValueError).
_VALUE_ERRORS = (ValueError, TypeError, ArithmeticError, UnhandledPythonError)


def validate_properties(schema: Mapping[str, PropSchema], values: Mapping[str, Any] | None, *,
                        resource_name: str, resource_section: str = "resources",
                        properties_section: str = "properties", strict_values: bool = True,
                        custom_constraints: CustomConstraints | None = None,
                        unchecked: Collection[str] = ()) -> dict[str, Any]:
    """The typed, defaulted values of a resource's properties, or ``StackValidationFailed``.

    ``resource_section``/``properties_section`` are the template's spellings
    (``Resources``/``Properties`` in CFN templates). With ``strict_values``
    false (Heat's ``POST /validate``) only unknown names are errors; values
    are converted where they can be and kept as given where they cannot.
    ``unchecked`` names the properties whose values read resources not yet
    created: as Heat does, they are converted to their type but neither their
    constraints nor the keys of their nested maps are checked.
    """
    custom = custom_constraints if custom_constraints is not None else shared_defaults()
    converter = _Converter(custom, strict_values)
    try:
        if strict_values:
            return converter.properties(schema, values or {}, unchecked=frozenset(unchecked))
        return converter.lenient_properties(schema, values or {})
    except _Invalid as exc:
        raise StackValidationFailed(
            exc.message, (resource_section, resource_name, properties_section, *exc.path),
            error="Property error") from None


class _Converter:
    def __init__(self, custom: CustomConstraints, validate: bool) -> None:
        self.custom = custom
        self.validate = validate

    def properties(self, schema: Mapping[str, PropSchema], data: Mapping[Any, Any],
                   unchecked: frozenset[str] = frozenset()) -> dict[str, Any]:
        """Heat's ``Properties.validate`` and reads in one pass, for one mapping level."""
        if self.validate:
            for key in data:
                if key not in schema:
                    raise _Invalid(f"Unknown Property {key}")
        loose = _Converter(self.custom, False) if unchecked else self
        return {key: (loose if key in unchecked else self).property(key, prop, data)
                for key, prop in schema.items()}

    def lenient_properties(self, schema: Mapping[str, PropSchema], data: Mapping[Any, Any]
                           ) -> dict[str, Any]:
        for key in data:
            if key not in schema:
                raise _Invalid(f"Unknown Property {key}")
        typed: dict[str, Any] = {}
        for key, prop in schema.items():
            try:
                typed[key] = self.property(key, prop, data)
            except _Invalid:
                typed[key] = data.get(key)
        return typed

    def property(self, key: PathItem, prop: PropSchema, data: Mapping[Any, Any]) -> Any:
        if key in data:
            raw = data[key]
            if isinstance(raw, Unresolvable):
                raise _Invalid(raw.message, (key, *raw.path))
        elif prop.default is not None:
            raw = None  # converting None is how Heat applies a default
        elif prop.required:
            # No path: Heat names the property in the message instead.
            raise _Invalid(f"Property {key} not assigned")
        else:
            return None
        try:
            return self.value(prop, raw)
        except _Invalid as exc:
            raise exc.under(key) from None
        except _VALUE_ERRORS as exc:
            raise _Invalid(str(exc), (key,)) from None

    def value(self, prop: PropSchema, raw: Any) -> Any:
        if raw is UNKNOWN:
            return UNKNOWN
        typed = _CONVERTERS[prop.type](self, prop, raw)
        if self.validate and not _contains_unknown(typed):
            for constraint in prop.constraints:
                problem = _constraint_failure(prop, constraint, typed, self.custom)
                if problem is not None:
                    raise _Invalid(problem)
        return typed

    # ---- one function per type: Heat's Property._get_<type> ------------------------------------
    def to_string(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default or ""
        if isinstance(raw, str):
            return raw
        if isinstance(raw, int):  # booleans too: true -> "True"
            return str(raw)
        raise ValueError(f"Value must be a string; got {raw!r}")

    def to_integer(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default or 0
        try:
            return int(raw)  # so 2.7 -> 2 and " 3 " -> 3, as in Heat
        except ValueError:
            raise TypeError(f"Value '{raw}' is not an integer") from None

    def to_number(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default or 0
        return to_number(raw)

    def to_boolean(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default or False
        if isinstance(raw, bool):
            return raw
        if isinstance(raw, str):
            # Unlike parameters, properties take no yes/no/1/0; the message shows the lowered text.
            lowered = raw.lower()
            if lowered not in ("true", "false"):
                raise ValueError(f'"{lowered}" is not a valid boolean')
            return lowered == "true"
        raise TypeError(f'"{raw}" is not a valid boolean')

    def to_map(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default if prop.default is not None else {}
        if not isinstance(raw, Mapping):
            if prop.allow_conversion and isinstance(raw, str):
                return raw
            if prop.allow_conversion and isinstance(raw, Sequence):
                return json.dumps(raw)
            raise TypeError(f'"{raw}" is not a map')
        if isinstance(prop.schema, Mapping):
            return self.properties(prop.schema, raw)
        return dict(raw)

    def to_list(self, prop: PropSchema, raw: Any) -> Any:
        if raw is None:
            raw = prop.default or []
        if prop.allow_conversion and isinstance(raw, str):
            raw = raw.split(",") if raw else []
        if not isinstance(raw, Sequence) or isinstance(raw, str):
            raise TypeError(f'"{raw!r}" is not a list')
        item = prop.schema
        if not isinstance(item, PropSchema):
            return list(raw)
        # Items are a mapping keyed by index, so errors read "[1]" and "[1].valid".
        return list(self.properties({str(i): item for i in range(len(raw))},
                                    {str(i): v for i, v in enumerate(raw)}).values())

    def to_any(self, prop: PropSchema, raw: Any) -> Any:
        # No conversion and no default: an explicit null stays null.
        return raw


_CONVERTERS: Final = {
    "string": _Converter.to_string, "integer": _Converter.to_integer, "number": _Converter.to_number,
    "boolean": _Converter.to_boolean, "map": _Converter.to_map, "list": _Converter.to_list,
    "any": _Converter.to_any,
}


def _contains_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, Mapping):
        return any(_contains_unknown(v) for v in value.values())
    if isinstance(value, list):
        return any(_contains_unknown(v) for v in value)
    return False


def _constraint_failure(prop: PropSchema, constraint: Constraint, value: Any,
                        custom: CustomConstraints | None) -> str | None:
    """None if ``value`` meets ``constraint``, else the message Heat shows."""
    try:
        if isinstance(constraint, AllowedValues) and prop.type == "integer":
            # Heat compares integers as integers: a float among the allowed values is an error.
            for allowed in constraint.allowed:
                if not _is_integral(allowed):
                    raise ValueError(f'Value "{allowed}" is invalid for data type "Integer".')
        check(constraint, value, _CHECK_AS[prop.type], prop.type_name, custom)
    except _VALUE_ERRORS as exc:
        return str(exc)
    return None


def _is_integral(value: Any) -> bool:
    try:
        return not isinstance(to_number(value), float)
    except (ValueError, TypeError):
        return False


# ---- what GET /resource_types/{type} shows --------------------------------------------------------

def _constraint_api(constraint: Constraint) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    if constraint.description is not None:
        shown["description"] = constraint.description
    if isinstance(constraint, (Range, Length)):
        bounds = {k: v for k, v in (("min", constraint.min), ("max", constraint.max)) if v is not None}
        shown[constraint.key] = bounds
    elif isinstance(constraint, Modulo):
        shown["modulo"] = {"step": constraint.step, "offset": constraint.offset}
    elif isinstance(constraint, AllowedValues):
        shown["allowed_values"] = [*constraint.allowed, *constraint.extensions]
    elif isinstance(constraint, AllowedPattern):
        shown["allowed_pattern"] = constraint.pattern
    else:
        shown["custom_constraint"] = constraint.name
    return shown


def property_api(prop: PropSchema) -> dict[str, Any]:
    """One property as the API shows it; absent keys are those Heat leaves out when unset."""
    shown: dict[str, Any] = {"type": prop.type}
    if prop.description is not None:
        shown["description"] = prop.description
    if prop.default is not None:
        shown["default"] = prop.default
    if isinstance(prop.schema, PropSchema):
        shown["schema"] = {"*": property_api(prop.schema)}
    elif isinstance(prop.schema, Mapping):
        shown["schema"] = {name: property_api(s) for name, s in prop.schema.items()}
    shown["required"] = prop.required
    if prop.constraints:
        shown["constraints"] = [_constraint_api(c) for c in prop.constraints]
    shown["update_allowed"] = prop.update_allowed
    shown["immutable"] = prop.immutable
    return shown


def schema_api(schema: Mapping[str, PropSchema]) -> dict[str, dict[str, Any]]:
    """The ``properties`` of ``GET /resource_types/{type}``: hidden properties left out."""
    return {name: property_api(prop) for name, prop in schema.items()
            if prop.support_status != "HIDDEN"}
