"""A software config's declared inputs and outputs, checked and stored as Heat stores them (pure).

Heat reads each declaration through a properties schema of its own (``name``
required, ``type`` one of five, ``replace_on_change`` and ``error_output``
booleans) and stores only the values that are not null, with ``type``
defaulted; an input's ``default`` is converted to the input's ``type`` as a
template parameter of that type would be (so a ``Json`` input takes JSON text,
a ``CommaDelimitedList`` one a comma-separated string), except the empty string
that older clients sent for every type. A derived config's inputs also carry
``value``, kept as given. Users see the wording of every refusal, so it is Heat's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, Literal

from libs.resources.properties import PropSchema, PropType, validate_properties
from libs.template.constraints import AllowedValues
from libs.template.errors import (
    InvalidSchemaError,
    MalformedRequest,
    StackValidationFailed,
    UnhandledPythonError,
    format_path,
)

Kind = Literal["inputs", "outputs"]

# Heat's I/O types, in its order (its refusal lists them so), and what each is as a property.
TYPES: Final[Mapping[str, PropType]] = MappingProxyType({
    "String": "string", "Number": "number", "CommaDelimitedList": "list", "Json": "map",
    "Boolean": "boolean"})

_TYPE = PropSchema("string", "The type of the value.", default="String",
                   constraints=(AllowedValues(tuple(TYPES)),))
# The declarations' schemas, which a config resource's inputs and outputs properties have too.
INPUT_SCHEMA: Final[Mapping[str, PropSchema]] = MappingProxyType({
    "name": PropSchema("string", "The input's name.", required=True),
    "description": PropSchema("string", "What the input is for."),
    "type": _TYPE,
    "default": PropSchema("any", "The value when a deployment gives none."),
    "replace_on_change": PropSchema(
        "boolean", "A deployment whose value of this input changes is replaced rather than updated.",
        default=False),
})
OUTPUT_SCHEMA: Final[Mapping[str, PropSchema]] = MappingProxyType({
    "name": PropSchema("string", "The output's name.", required=True),
    "description": PropSchema("string", "What the output is."),
    "type": _TYPE,
    "error_output": PropSchema("boolean", "A value of this output means the deployment failed.",
                               default=False),
})
_NO_VALUE: Final = object()


def checked(kind: Kind, declared: Any, *, located: bool = True) -> list[dict[str, Any]]:
    """The declarations of ``kind`` as Heat stores them; null is none. A refusal names the field:
    ``HTTPBadRequest`` for a value that is not a list of maps, Heat's ``ValueError``
    (``Property error: ...``) or ``InvalidSchemaError`` for a declaration it refuses. Without
    ``located``, the ``ValueError`` is Heat's word for word, not saying which declaration (a
    config resource's failure, whose declarations its properties checked already)."""
    if declared is None:
        return []
    if not isinstance(declared, Sequence) or isinstance(declared, str):
        raise MalformedRequest(f"{kind}: Software Config I/O Schema must be in a list")
    for index, item in enumerate(declared):
        if not isinstance(item, Mapping):
            raise MalformedRequest(f"{kind}[{index}]: Software Config I/O Schema must be a dict")
    return [_input(item, index, located) if kind == "inputs" else _output(item, index, located)
            for index, item in enumerate(declared)]


def _input(item: Mapping[str, Any], index: int, located: bool) -> dict[str, Any]:
    given = dict(item)
    value = given.pop("value", _NO_VALUE)
    schema = dict(INPUT_SCHEMA)
    if "type" in given and "default" in given and not (given["default"] == "" and given["type"] != "String"):
        # The default is checked as a parameter of the input's type would be ("" passes for
        # any type: that is what older clients sent when there was no default).
        kind = TYPES.get(given["type"]) if isinstance(given["type"], str) else None
        if kind is None:
            raise InvalidSchemaError(f"Invalid type ({given['type']})")
        schema["default"] = PropSchema(kind, required=True, update_allowed=True,
                                       allow_conversion=kind in ("map", "list"))
    stored = _stored(schema, given, ("inputs", index) if located else ())
    if not stored.get("replace_on_change"):
        stored.pop("replace_on_change", None)
    if value is not _NO_VALUE:
        stored["value"] = value
    return stored


def _output(item: Mapping[str, Any], index: int, located: bool) -> dict[str, Any]:
    return _stored(OUTPUT_SCHEMA, item, ("outputs", index) if located else ())


def _stored(schema: Mapping[str, PropSchema], item: Mapping[str, Any], where: tuple[str | int, ...]
            ) -> dict[str, Any]:
    try:
        typed = validate_properties(schema, item, resource_name="io")
    except StackValidationFailed as exc:
        # Heat raises this as a plain ValueError; its path starts inside the declaration, so the
        # list and the index are put in front to say which one.
        path = format_path((*where, *exc.path[3:]))
        raise UnhandledPythonError("ValueError", f"Property error: {path + ': ' if path else ''}{exc.detail}"
                                   ) from None
    return {key: value for key, value in typed.items() if value is not None}
