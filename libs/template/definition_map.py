"""A template's enabled resources, each parsed the first time it is asked for.

A worker stepping two members of a group of 10^5 needs their two definitions,
not 10^5: a lookup by name parses that resource alone (and caches it); only
going through them all (iterating, ``len``) parses every one, in template
order, so the first bad resource is still the one an error names.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from libs.template.definitions import ResourceDefinition

# Parses one resource's snippet: its definition, or None when its condition disables it.
Parse = Callable[[str, Any], "ResourceDefinition | None"]


class DefinitionMap(Mapping[str, ResourceDefinition]):
    def __init__(self, section: Callable[[], Mapping[Any, Any]], parse: Parse) -> None:
        self._section_of = section
        self._parse = parse
        self._section: Mapping[Any, Any] | None = None
        # Template keys by name (YAML may key a resource by a number: its name is the string).
        self._keys: dict[str, Any] | None = None
        self._parsed: dict[str, ResourceDefinition | None] = {}
        self._all: dict[str, ResourceDefinition] | None = None

    def _raw(self) -> Mapping[Any, Any]:
        if self._section is None:
            self._section = self._section_of()
        return self._section

    def _key(self, name: str) -> Any:
        if self._keys is None:
            self._keys = {str(k): k for k in self._raw()}
        return self._keys.get(name, _MISSING)

    def _one(self, name: str) -> ResourceDefinition | None:
        if name in self._parsed:
            return self._parsed[name]
        key = self._key(name)
        found = None if key is _MISSING else self._parse(name, self._raw()[key])
        self._parsed[name] = found
        return found

    def whole(self) -> dict[str, ResourceDefinition]:
        """Every enabled resource, parsed, in template order."""
        if self._all is None:
            every: dict[str, ResourceDefinition] = {}
            for key in self._raw():
                found = self._one(str(key))
                if found is not None:
                    every[str(key)] = found
            self._all = every
        return self._all

    def __getitem__(self, name: str) -> ResourceDefinition:
        if self._all is not None:
            return self._all[name]
        found = self._one(name) if isinstance(name, str) else None
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        if self._all is not None:
            return name in self._all
        return isinstance(name, str) and self._one(name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(self.whole())

    def __len__(self) -> int:
        return len(self.whole())

    def keys(self) -> KeysView[str]:
        return self.whole().keys()

    def values(self) -> ValuesView[ResourceDefinition]:
        return self.whole().values()

    def items(self) -> ItemsView[str, ResourceDefinition]:
        return self.whole().items()


_MISSING = object()
