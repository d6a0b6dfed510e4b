"""A software config's declared inputs and outputs: their schema as properties, and how they are stored.

A config resource stores each declaration as Heat's software config API does: every key
of the schema kept but the null ones (a description never given is ``""``, as Heat reads
a null string), ``replace_on_change`` only when true, and an input's ``default`` turned into
the input's type as a parameter of that type would turn it (``Number`` text into a number,
``CommaDelimitedList`` text split at commas, a ``Json`` list into JSON text), except
``""``, which older clients sent for every type and stays as it is. The one way this can
fail is Heat's ``ValueError`` (``Property error: default: ...``), raised as :class:`BadDefault`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final

from libs.resources.properties import PropSchema, PropType, validate_properties
from libs.template.constraints import AllowedValues
from libs.template.errors import StackValidationFailed

IO_TYPES: Final = ("String", "Number", "CommaDelimitedList", "Json", "Boolean")
# What each input type's default is converted as (a template parameter of that type).
_DEFAULT_AS: Final[Mapping[str, PropType]] = {
    "String": "string", "Number": "number", "CommaDelimitedList": "list", "Json": "map", "Boolean": "boolean"}

_IO_TYPE = PropSchema("string", "The type of the value.", default="String",
                      constraints=(AllowedValues(IO_TYPES),))
INPUT_SCHEMA: Final[Mapping[str, PropSchema]] = {
    "name": PropSchema("string", "The input's name.", required=True),
    "description": PropSchema("string", "What the input is for."),
    "type": _IO_TYPE,
    "default": PropSchema("any", "The value when a deployment gives none."),
    "replace_on_change": PropSchema(
        "boolean", "A deployment whose value of this input changes is replaced rather than updated.",
        default=False),
}
OUTPUT_SCHEMA: Final[Mapping[str, PropSchema]] = {
    "name": PropSchema("string", "The output's name.", required=True),
    "description": PropSchema("string", "What the output is."),
    "type": _IO_TYPE,
    "error_output": PropSchema("boolean", "A value of this output means the deployment failed.",
                               default=False),
}
INPUTS = PropSchema("list", "The inputs the config takes.", schema=PropSchema("map", schema=INPUT_SCHEMA))
OUTPUTS = PropSchema("list", "The outputs the config gives back.",
                     schema=PropSchema("map", schema=OUTPUT_SCHEMA))


class BadDefault(ValueError):
    """An input's default that its type refuses; the message is Heat's."""


def stored_input(declared: Mapping[str, Any]) -> dict[str, Any]:
    """One declared input as stored (``value`` too, kept as given, on a derived config's inputs)."""
    stored = {key: ("" if key == "description" and value is None else value)
              for key, value in declared.items() if key != "value"}
    kind = _DEFAULT_AS.get(str(stored.get("type") or "String"), "string")
    if "default" in stored and not (stored["default"] == "" and stored.get("type") != "String"):
        schema = PropSchema(kind, required=True, allow_conversion=kind in ("map", "list"))
        try:
            stored["default"] = validate_properties({"default": schema}, {"default": stored["default"]},
                                                    resource_name="input")["default"]
        except StackValidationFailed as exc:
            raise BadDefault(f"Property error: default: {exc.detail}") from None
    if not stored.get("replace_on_change"):
        stored.pop("replace_on_change", None)
    stored = {key: value for key, value in stored.items() if value is not None}
    if "value" in declared:
        stored["value"] = declared["value"]
    return stored


def stored_output(declared: Mapping[str, Any]) -> dict[str, Any]:
    stored = {key: ("" if key == "description" and value is None else value)
              for key, value in declared.items()}
    return {key: value for key, value in stored.items() if value is not None}


def stored_body(config: Any, inputs: Any, outputs: Any, options: Any) -> dict[str, Any]:
    """Heat's ``{config, inputs, outputs, options}`` of a config, its declarations as stored."""
    return {"config": config, "inputs": [stored_input(i) for i in inputs or ()],
            "outputs": [stored_output(o) for o in outputs or ()], "options": dict(options or {})}


def is_uuid_like(value: Any) -> bool:
    """Whether ``value`` names a config by id (Heat looks such a value up, other text is content)."""
    if not isinstance(value, str):
        return False
    try:
        parsed = uuid.UUID(value)
    except ValueError:
        return False
    bare = value.lower().removeprefix("urn:").removeprefix("uuid:").strip("{}").replace("-", "")
    return parsed.hex == bare
