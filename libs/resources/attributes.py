"""Resource attribute schemas, and how ``GET /resource_types/{type}`` shows them.

Every resource type also has the base attribute ``show`` (the cloud's view
of the resource); types with no cloud object resolve it to None, and
``get_attr`` with no attribute name leaves it out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, Literal

from libs.resources.properties import SupportStatusName

AttrType = Literal["string", "map", "list", "integer", "boolean"]

SHOW: Final = "show"


@dataclasses.dataclass(frozen=True)
class AttrSchema:
    """One attribute's declaration (Heat's ``attributes.Schema``); ``type`` None means any."""

    description: str | None = None
    type: AttrType | None = None
    support_status: SupportStatusName = "SUPPORTED"


BASE_ATTRIBUTES: Final[Mapping[str, AttrSchema]] = {
    SHOW: AttrSchema("Detailed information about resource.", "map"),
}


def attribute_api(attr: AttrSchema) -> dict[str, Any]:
    shown: dict[str, Any] = {}
    if attr.description is not None:
        shown["description"] = attr.description
    if attr.type is not None:
        shown["type"] = attr.type
    return shown


def attributes_api(schema: Mapping[str, AttrSchema], *, with_base: bool = True) -> dict[str, dict[str, Any]]:
    """The ``attributes`` of ``GET /resource_types/{type}``: the type's own, then ``show``."""
    merged = {**schema, **BASE_ATTRIBUTES} if with_base else dict(schema)
    return {name: attribute_api(attr) for name, attr in merged.items() if attr.support_status != "HIDDEN"}
