"""Resolving a stack's snippets against known resource data: properties and outputs.

The engine knows each resource's reference id and attributes (from the
database, kept as :mod:`libs.template.attribute_store` says); validation and
preview know none (they resolve what they can and treat the rest as unknown).
:class:`ResourceData` is that knowledge; the :class:`StackResolver` joins it
with parameters, conditions and files.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from libs.template import attribute_store, errors
from libs.template.functions import base
from libs.template.stack import StackDefinition


class ResourceData(Protocol):
    def reference(self, resource: str) -> Any: ...

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any: ...

    def all_attributes(self, resource: str) -> dict[str, Any] | None:
        """Every attribute of the resource; None while it does not exist (Heat's null)."""


class StaticResourceData:
    """Resource data held in memory: what tests and previews use."""

    def __init__(self, references: Mapping[str, Any] | None = None,
                 attributes: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._references = dict(references or {})
        self._attributes = {k: dict(v) for k, v in (attributes or {}).items()}

    def reference(self, resource: str) -> Any:
        return self._references.get(resource)

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        return attribute_store.read(self._attributes.get(resource, {}), attribute, path)

    def all_attributes(self, resource: str) -> dict[str, Any]:
        return attribute_store.read_all(self._attributes.get(resource, {}))


class StackResolver:
    """A :class:`~libs.template.functions.base.Resolver` over one stack definition."""

    def __init__(self, stack: StackDefinition, data: ResourceData, *,
                 files: Mapping[str, str] | None = None, facade: Mapping[str, Any] | None = None,
                 availability_zones: Sequence[str] = ("nova",)) -> None:
        self._stack = stack
        self._data = data
        self._files = dict(files if files is not None else stack.template.files)
        self._facade = facade if facade is not None else stack.facade
        self._azs = list(availability_zones)

    def parameter(self, name: str) -> Any:
        if name not in self._stack.parameters:
            raise errors.UserParameterMissing(name)
        return self._stack.parameters.value(name)

    def condition(self, name: str) -> bool:
        return self._stack.conditions.is_enabled(name)

    def _known(self, resource: str) -> None:
        if resource not in self._stack.resources:
            raise errors.InvalidTemplateReference(resource, "unknown")

    def reference(self, resource: str) -> Any:
        self._known(resource)
        return self._data.reference(resource)

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        self._known(resource)
        return self._data.attribute(resource, attribute, path)

    def all_attributes(self, resource: str) -> Any:
        self._known(resource)
        found = self._data.all_attributes(resource)
        if found is None:
            return None
        # Heat's FnGetAtts leaves out the "show" attribute (the whole API object).
        return {k: v for k, v in found.items() if k != "show"}

    def file(self, key: str) -> str | None:
        return self._files.get(key)

    def facade(self, field: str) -> Any:
        if self._facade is None:
            # What Heat says when a top-level stack asks for its (absent) parent: it calls
            # ``parent.metadata_get()`` for the metadata, reads ``parent.t`` for the policies.
            attribute = "metadata_get" if field == "metadata" else "t"
            raise AttributeError(f"'NoneType' object has no attribute '{attribute}'")
        return self._facade.get(field)

    def availability_zones(self) -> list[str]:
        return list(self._azs)

    # ---- what the API shows ---------------------------------------------------
    def properties(self, resource: str) -> Any:
        """A resource's properties resolved (Heat's "resolved properties")."""
        return base.resolve(self._stack.resources[resource].properties, self, nullable=False) or {}

    def external_id(self, resource: str) -> str | None:
        """The id of the existing resource the template takes over (``external_id``), if any."""
        given = self._stack.resources[resource].external_id
        value = None if given is None else base.resolve(given, self)
        return None if value is None else str(value)

    def update_policy(self, resource: str) -> dict[str, Any]:
        """A resource's ``update_policy`` resolved (``{}`` when it has none)."""
        resolved = base.resolve(self._stack.resources[resource].update_policy, self, nullable=True)
        return dict(resolved) if isinstance(resolved, dict) else {}

    def output(self, name: str) -> dict[str, Any]:
        """One output in the API's shape; a failure is ``output_error``, never an exception."""
        defn = self._stack.outputs[name]
        body: dict[str, Any] = {
            "output_key": name,
            "description": "No description given" if defn.description is None else str(defn.description),
        }
        value = None
        try:
            if defn.enabled:
                value = base.resolve(defn.value, self)
        except Exception as exc:  # Heat reports any failure, whatever its type
            body["output_error"] = str(exc)
        body["output_value"] = value
        return body

    def outputs(self) -> list[dict[str, Any]]:
        return [self.output(name) for name in self._stack.outputs]
