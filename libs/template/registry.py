"""The environment's ``resource_registry``: what a resource type maps to, and per-resource settings.

Type resolution follows Heat's ``ResourceRegistry.get_resource_info``: every
entry that could apply is a candidate, candidates are tried most specific first
(a ``resources.<name>.<Type>`` override, then top-level entries in lexical
order of their key, then the builtin types), aliases are followed, and an alias
that leads nowhere lets the next candidate try. The lexical order is Heat's
tie-break and has a visible effect: ``"*"`` sorts before letters, so
``"OS::*"`` wins over an exact ``"OS::Nova::Server"`` entry.

Hooks and ``restricted_actions`` live in ``resources`` under fnmatch patterns;
type overrides there match the resource name exactly, never as a pattern.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Collection, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any, Literal

from libs.template.errors import (
    InvalidBreakPointHook,
    InvalidRestrictedAction,
    StackValidationFailed,
    UnhandledPythonError,
)

TEMPLATE_SUFFIXES = (".yaml", ".template")
HOOK_TYPES = ("pre-create", "pre-update", "pre-delete", "post-create", "post-update", "post-delete")
RESTRICTED_ACTIONS = ("update", "replace")
RESOURCES = "resources"
HOOKS = "hooks"
RESTRICTED = "restricted_actions"

# Heat has no cycle check: an alias loop ends in Python's RecursionError (HTTP 500).
# A loop is caught as soon as a type comes round again; the depth cap stops
# wildcard chains that grow the type name forever ("OS::*": "OS::Heat::*").
_MAX_ALIAS_DEPTH = 200


@dataclasses.dataclass(frozen=True)
class _Entry:
    """One type mapping (Heat's ``ResourceInfo``): ``path`` is where it sits in the registry."""

    path: tuple[str, ...]
    kind: Literal["template", "alias", "glob"]
    value: str

    @property
    def name(self) -> str:
        return self.path[-1]


@dataclasses.dataclass(frozen=True)
class ResolvedType:
    """What a resource type resolved to: a builtin type, or a template resource.

    For a template, ``type_name`` is the registry key that named it (Heat's
    ``tri.name``) and ``template`` the key to look up in ``files`` (or a URL).
    ``path`` identifies the registry entry, for :meth:`ResourceRegistry.child_registry`.
    """

    kind: Literal["builtin", "template"]
    type_name: str
    template: str | None
    path: tuple[str, ...]

    @property
    def is_template(self) -> bool:
        return self.kind == "template"


def unknown_type_message(type_name: str) -> str:
    """Heat's ``EntityNotFound`` text for a type no entry or builtin provides."""
    return f"The Resource Type ({type_name}) could not be found."


def _check_listed(key: str, value: Any) -> None:
    """Heat validates ``hooks`` / ``restricted_actions`` wherever they appear in the registry."""
    allowed = HOOK_TYPES if key == HOOKS else RESTRICTED_ACTIONS
    if isinstance(value, str):
        ok = value in allowed
    elif isinstance(value, Sequence):
        ok = all(item in allowed for item in value)
    else:
        ok = False
    if ok:
        return
    # The value and the tuple of allowed values print as Python reprs, as in Heat.
    if key == HOOKS:
        raise InvalidBreakPointHook(
            f'Invalid hook type "{value}" for resource breakpoint, '
            f"acceptable hook types are: {HOOK_TYPES}")
    raise InvalidRestrictedAction(
        f'Invalid restricted_action type "{value}" for resource, '
        f"acceptable restricted_action types are: {RESTRICTED_ACTIONS}")


def _make_entry(path: tuple[str, ...], value: Any) -> _Entry:
    name = path[-1]
    if name.endswith(TEMPLATE_SUFFIXES):
        # A key naming a template file is a template whatever its value says.
        return _Entry(path, "template", name)
    if not isinstance(value, str):
        # Heat takes any other non-string as a plugin class and trips over it.
        raise UnhandledPythonError("AttributeError",
                          f"'{type(value).__name__}' object has no attribute 'support_status'")
    if value.endswith(TEMPLATE_SUFFIXES):
        return _Entry(path, "template", value)
    if name.endswith("*"):
        return _Entry(path, "glob", value)
    return _Entry(path, "alias", value)


def _json_key(key: Any) -> str:
    # Deliberate: YAML may give non-string keys (a group member "0" written as 0),
    # on which Heat fails; heatclient's JSON round trip makes them strings first.
    if isinstance(key, str):
        return key
    return json.dumps(key) if key is None or isinstance(key, bool) else str(key)


def _listed(value: Any) -> set[str]:
    if isinstance(value, str):
        return {value}
    return {item for item in value if isinstance(item, str)}


class ResourceRegistry:
    """A user environment's registry over a set of builtin types.

    Immutable except for one Heat behaviour: resolving a type that is itself a
    template name (``type: nested.yaml``) records ``nested.yaml: nested.yaml`` in
    the registry, and Heat stores and shows that entry (``GET .../environment``).
    """

    def __init__(self, builtin_types: Collection[str] = ()) -> None:
        self._tree: dict[str, Any] = {RESOURCES: {}}
        self._builtins = frozenset(builtin_types)
        self._resolved: dict[tuple[str, str | None, ResolvedType | None], ResolvedType | None] = {}

    @classmethod
    def from_dict(cls, data: Any, builtin_types: Collection[str] = ()) -> ResourceRegistry:
        """A registry loaded from an environment's ``resource_registry`` section."""
        registry = cls(builtin_types)
        registry._load((), data)
        return registry

    def load(self, data: Any) -> ResourceRegistry:
        """A new registry with ``data`` loaded over this one (Heat's ``registry.load``).

        ``null`` removes an entry of this registry (never a builtin); ``"Prefix*": null``
        removes every type mapping at that level whose key starts with the prefix.
        """
        registry = self._copy()
        registry._load((), data)
        return registry

    @property
    def builtin_types(self) -> frozenset[str]:
        return self._builtins

    def with_builtin_types(self, builtin_types: Collection[str]) -> ResourceRegistry:
        registry = self._copy()
        registry._builtins = frozenset(builtin_types)
        return registry

    def to_dict(self) -> dict[str, Any]:
        """The section as Heat stores and returns it (always with a ``resources`` map)."""
        def render(level: Mapping[str, Any]) -> dict[str, Any]:
            return {key: render(item) if isinstance(item, dict)
                    else item.value if isinstance(item, _Entry)
                    else copy.deepcopy(item)
                    for key, item in level.items()}
        return render(self._tree)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResourceRegistry):
            return NotImplemented
        return self._tree == other._tree and self._builtins == other._builtins

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ResourceRegistry({self.to_dict()!r})"

    # ---- loading -------------------------------------------------------------
    def _copy(self) -> ResourceRegistry:
        registry = ResourceRegistry(self._builtins)
        registry._tree = copy.deepcopy(self._tree)
        return registry

    def _load(self, path: tuple[str, ...], data: Any) -> None:
        self._resolved.clear()
        if not isinstance(data, Mapping):
            raise UnhandledPythonError("AttributeError",
                              f"'{type(data).__name__}' object has no attribute 'items'")
        for raw_key, value in data.items():
            here = (*path, _json_key(raw_key))
            key = here[-1]
            if value is None:
                self._remove(here)
            elif key in (HOOKS, RESTRICTED):
                _check_listed(key, value)
                self._put(here, copy.deepcopy(value))
            elif isinstance(value, Mapping):
                self._load(here, value)
            else:
                self._put(here, _make_entry(here, value))
        if not path:
            self._check_resources_map()

    def _check_resources_map(self) -> None:
        # A null or scalar "resources" breaks Heat at its next lookup by resource
        # name; raise Heat's error now, where the cause is visible.
        resources = self._tree.get(RESOURCES)
        if resources is None:
            raise UnhandledPythonError("KeyError", repr(RESOURCES))
        if isinstance(resources, _Entry):
            heat_class = "TemplateResourceInfo" if resources.kind == "template" else "MapResourceInfo"
            raise UnhandledPythonError("AttributeError", f"'{heat_class}' object has no attribute 'get'")

    def _level(self, path: tuple[str, ...]) -> dict[str, Any]:
        level = self._tree
        for key in path:
            child = level.get(key)
            if not isinstance(child, dict):
                child = level[key] = {}
            level = child
        return level

    def _put(self, path: tuple[str, ...], item: Any) -> None:
        self._level(path[:-1])[path[-1]] = item

    def _remove(self, path: tuple[str, ...]) -> None:
        # Heat creates the enclosing maps even to remove from them, and shows them.
        level = self._level(path[:-1])
        name = path[-1]
        if name.endswith("*"):
            for key in [k for k, v in level.items()
                        if isinstance(v, _Entry) and k.startswith(name[:-1])]:
                del level[key]
        else:
            level.pop(name, None)

    # ---- type resolution -------------------------------------------------------
    def resolve(self, resource_name: str | None, type_name: str, *,
                ignore: ResolvedType | None = None) -> ResolvedType | None:
        """What ``type_name`` of resource ``resource_name`` is, or None if nothing provides it.

        ``ignore`` skips one result at the top level only, as Heat does to find
        the builtin "facade" behind a template that overrides a type.
        """
        if type(type_name) is not str:
            return self._find(type_name, resource_name, ignore, ())
        # A stack of 10^5 resources of a few types asks the same few questions 10^5 times; a
        # resource's name changes the answer only where the registry has an entry of that name.
        named = resource_name if resource_name and resource_name in self._tree[RESOURCES] else None
        key = (type_name, named, ignore)
        if key not in self._resolved:
            self._resolved[key] = self._find(type_name, resource_name, ignore, ())
        return self._resolved[key]

    def check_type(self, resource_name: str, type_name: object) -> ResolvedType:
        """:meth:`resolve`, failing with Heat's ``StackValidationFailed`` messages."""
        if type_name == "":
            raise StackValidationFailed(f'Resource "{resource_name}" has no type')
        if type_name is None:
            raise StackValidationFailed(
                f'Non-empty resource type is required for resource "{resource_name}"')
        if not isinstance(type_name, str):
            raise StackValidationFailed(f'Resource "{resource_name}" type is not a string')
        found = self.resolve(resource_name, type_name)
        if found is None:
            raise StackValidationFailed(unknown_type_message(type_name))
        return found

    def _find(self, type_name: str, resource_name: str | None, ignore: ResolvedType | None,
              chain: tuple[str, ...]) -> ResolvedType | None:
        if ignore is None:
            # Heat's lookup of a type is a pure function of the type, so meeting
            # one again while following aliases means Heat would recurse forever.
            if type_name in chain or len(chain) >= _MAX_ALIAS_DEPTH:
                raise UnhandledPythonError("RecursionError", "maximum recursion depth exceeded")
            chain = (*chain, type_name)
        for entry in self._candidates(type_name, resource_name):
            found = self._follow(entry, type_name, resource_name, chain)
            if found is not None and found != ignore:
                return found
        if type_name in self._builtins:
            builtin = ResolvedType("builtin", type_name, None, (type_name,))
            if builtin != ignore:
                return builtin
        return None

    def _candidates(self, type_name: str, resource_name: str | None) -> list[_Entry]:
        found: list[_Entry] = []
        if type_name.endswith(TEMPLATE_SUFFIXES) and type_name not in self._tree:
            self._tree[type_name] = _Entry((type_name,), "template", type_name)
        if resource_name:
            override = self._tree[RESOURCES].get(resource_name)
            if isinstance(override, dict) and isinstance(override.get(type_name), _Entry):
                found.append(override[type_name])
        direct = self._tree.get(type_name)
        if isinstance(direct, _Entry):
            found.append(direct)
        found += [entry for key, entry in self._tree.items()
                  if key.endswith("*") and isinstance(entry, _Entry) and entry.kind == "glob"
                  and type_name != entry.value and type_name.startswith(key[:-1])]
        # Longer (per-resource) paths first, then Heat's lexical order of paths.
        return sorted(found, key=lambda entry: (-len(entry.path), entry.path))

    def _follow(self, entry: _Entry, type_name: str, resource_name: str | None,
                chain: tuple[str, ...]) -> ResolvedType | None:
        if entry.kind == "template":
            return ResolvedType("template", entry.name, entry.value, entry.path)
        target = entry.value
        if entry.kind == "glob" and target.endswith("*"):
            target = target[:-1] + type_name[len(entry.name) - 1:]
        return self._find(target, resource_name, None, chain)

    # ---- per-resource settings ---------------------------------------------------
    def _settings_for(self, resource_name: str) -> list[Mapping[str, Any]]:
        return [settings for pattern, settings in self._tree[RESOURCES].items()
                if isinstance(settings, dict) and fnmatchcase(resource_name, pattern)]

    def matches_hook(self, resource_name: str, hook: str) -> bool:
        """Whether any ``resources`` pattern matching the name sets this hook."""
        return hook in self.hooks_for(resource_name)

    def has_resource_settings(self) -> bool:
        """Whether any ``resources`` entry names resources of this stack (hooks, restrictions, types)."""
        return bool(self._tree[RESOURCES])

    def has_hooks(self) -> bool:
        """Whether any resource of this stack has a hook (children's entries are not its own)."""
        return any(isinstance(settings, dict) and HOOKS in settings
                   for settings in self._tree[RESOURCES].values())

    def hooks_for(self, resource_name: str) -> set[str]:
        hooks: set[str] = set()
        for settings in self._settings_for(resource_name):
            if HOOKS in settings:
                hooks |= _listed(settings[HOOKS])
        return hooks

    def restricted_actions(self, resource_name: str) -> set[str]:
        """``update`` / ``replace`` restrictions from every matching ``resources`` pattern."""
        actions: set[str] = set()
        for settings in self._settings_for(resource_name):
            if RESTRICTED in settings:
                actions |= _listed(settings[RESTRICTED])
        return actions

    # ---- nested stacks ---------------------------------------------------------------
    def child_registry(self, parent_resource_name: str, *, remove: ResolvedType | None = None,
                       overlay: Any = None) -> ResourceRegistry:
        """The registry of the nested stack that resource ``parent_resource_name`` creates.

        Type mappings pass down. ``remove`` (what the parent resolved to) is taken
        out when it is a template, so a template overriding a type can use the
        builtin type inside itself. ``resources`` becomes the merged content of
        every key that fnmatch-matches the parent's name, the exact key last: so
        ``"*": {hooks: ...}`` does not reach into children (its ``hooks`` land as
        if set for a child resource called "hooks"), while ``parent: {child: ...}``
        does. ``overlay`` is a registry section loaded before that (Heat's child
        params when they are a full environment).
        """
        child = ResourceRegistry.from_dict(self.to_dict(), self._builtins)
        if overlay is not None:
            child._load((), overlay)
        if remove is not None and remove.is_template:
            level: Any = child._tree
            for key in remove.path[:-1]:
                level = level.get(key) if isinstance(level, dict) else None
            if isinstance(level, dict):
                level.pop(remove.path[-1], None)
        kept: dict[str, Any] = {}
        resources = child._tree[RESOURCES]
        for pattern, settings in resources.items():
            if fnmatchcase(parent_resource_name, pattern) and isinstance(settings, dict):
                kept.update(settings)
        if isinstance(resources.get(parent_resource_name), dict):
            kept.update(resources[parent_resource_name])
        child._tree[RESOURCES] = kept
        # The nested stack's engine reloads its stored environment; do the same so
        # every entry's path is where it now sits.
        return ResourceRegistry.from_dict(child.to_dict(), self._builtins)
