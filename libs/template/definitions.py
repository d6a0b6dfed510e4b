"""Resource and output definitions: what a template says about each, parsed, not resolved."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from libs.template.functions import base

DELETE, RETAIN, SNAPSHOT = "Delete", "Retain", "Snapshot"


@dataclasses.dataclass(frozen=True)
class ResourceDefinition:
    """One resource of a template. Snippets are parsed: they may hold functions."""

    name: str
    type: str
    properties: Any = None
    metadata: Any = None
    depends_on: tuple[str, ...] = ()
    deletion_policy: str = DELETE
    update_policy: Any = None
    description: str | None = None
    condition: Any = None
    external_id: Any = None

    def references(self) -> Iterator[base.Reference]:
        """Resources used by functions in properties and metadata, with Heat's paths."""
        yield from base.dependencies(self.properties, f"{self.name}.Properties")
        yield from base.dependencies(self.metadata, f"{self.name}.Metadata")

    def required_names(self) -> set[str]:
        """Every resource this one must come after: ``depends_on`` plus implicit references.

        A resource with an ``external_id`` depends on nothing (Heat rejects an
        explicit ``depends_on`` for it earlier).
        """
        if self.external_id is not None:
            return set()
        return set(self.depends_on) | {ref.resource for ref in self.references()}

    def dep_attrs(self, resource: str) -> set[str]:
        """The attributes of ``resource`` this definition reads."""
        return set(base.dep_attrs(self.properties, resource)) | set(base.dep_attrs(self.metadata, resource))


@dataclasses.dataclass(frozen=True)
class OutputDefinition:
    """One output: its parsed value (None when its condition is false) and description."""

    name: str
    value: Any
    description: str | None = None
    enabled: bool = True

    def references(self) -> Iterator[base.Reference]:
        yield from base.dependencies(self.value)
