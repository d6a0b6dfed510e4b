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

_TYPE = PropSchema("string", default="String", constraints=(AllowedValues(tuple(TYPES)),))
_INPUT: Final[Mapping[str, PropSchema]] = MappingProxyType({
    "name": PropSchema("string", required=True),
    "description": PropSchema("string"),
    "type": _TYPE,
    "default": PropSchema("any"),
    "replace_on_change": PropSchema("boolean", default=False),
})
_OUTPUT: Final[Mapping[str, PropSchema]] = MappingProxyType({
    "name": PropSchema("string", required=True),
    "description": PropSchema("string"),
    "type": _TYPE,
    "error_output": PropSchema("boolean", default=False),
})
_NO_VALUE: Final = object()


def checked(kind: Kind, declared: Any) -> list[dict[str, Any]]:
    """The declarations of ``kind`` as Heat stores them; null is none. A refusal names the field:
    ``HTTPBadRequest`` for a value that is not a list of maps, Heat's ``ValueError``
    (``Property error: ...``) or ``InvalidSchemaError`` for a declaration it refuses."""
    if declared is None:
        return []
    if not isinstance(declared, Sequence) or isinstance(declared, str):
        raise MalformedRequest(f"{kind}: Software Config I/O Schema must be in a list")
    for index, item in enumerate(declared):
        if not isinstance(item, Mapping):
            raise MalformedRequest(f"{kind}[{index}]: Software Config I/O Schema must be a dict")
    return [_input(item, index) if kind == "inputs" else _output(item, index)
            for index, item in enumerate(declared)]


def _input(item: Mapping[str, Any], index: int) -> dict[str, Any]:
    given = dict(item)
    value = given.pop("value", _NO_VALUE)
    schema = dict(_INPUT)
    if "type" in given and "default" in given and not (given["default"] == "" and given["type"] != "String"):
        # The default is checked as a parameter of the input's type would be ("" passes for
        # any type: that is what older clients sent when there was no default).
        kind = TYPES.get(given["type"]) if isinstance(given["type"], str) else None
        if kind is None:
            raise InvalidSchemaError(f"Invalid type ({given['type']})")
        schema["default"] = PropSchema(kind, required=True, update_allowed=True,
                                       allow_conversion=kind in ("map", "list"))
    stored = _stored(schema, given, "inputs", index)
    if not stored.get("replace_on_change"):
        stored.pop("replace_on_change", None)
    if value is not _NO_VALUE:
        stored["value"] = value
    return stored


def _output(item: Mapping[str, Any], index: int) -> dict[str, Any]:
    return _stored(_OUTPUT, item, "outputs", index)


def _stored(schema: Mapping[str, PropSchema], item: Mapping[str, Any], kind: Kind, index: int
            ) -> dict[str, Any]:
    try:
        typed = validate_properties(schema, item, resource_name="io")
    except StackValidationFailed as exc:
        # Heat raises this as a plain ValueError; its path starts inside the declaration, so the
        # list and the index are put in front to say which one.
        where = format_path((kind, index, *exc.path[3:]))
        raise UnhandledPythonError("ValueError", f"Property error: {where}: {exc.detail}") from None
    return {key: value for key, value in typed.items() if value is not None}
