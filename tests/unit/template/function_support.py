"""Shared by the function tests: a dict-backed Resolver and the YAML case runner.

A case file under ``fixtures/functions`` holds ``resolver`` (defaults for every
case) and ``cases``, each with:

- ``id``, ``snippet`` (parsed at ``outputs.o.value``, as Heat parses an output);
- ``versions``: HOT dates or ``">=2015-10-15 <2016-10-14"``; by default every
  version that has the snippet's function (and does not list it as removed);
- ``expect`` (the resolved value), ``expect_removed: true`` (a nullable resolve
  gives REMOVED), or ``error``: ``"<ExceptionType>: <message>"`` raised by
  parsing, validating or resolving, whichever fails first;
- optional ``params``, ``refs``, ``attrs``, ``files``, ``conditions``, ``facade``
  merged over the file's ``resolver``; ``context: condition`` to parse as a
  condition; ``parse_resolver: false`` to parse without a resolver;
  ``deps`` (``[resource, path]`` pairs for dependencies at ``deps_root``,
  default ``r.Properties.p``) and ``dep_attrs`` (resource -> attributes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from libs.template import errors, versions
from libs.template.functions import base
from libs.template.functions.hot import Removed, select_path

FIXTURES = Path(__file__).parent / "fixtures" / "functions"
HOT_DATES = tuple(s.date for s in versions.all_versions() if s.kind == "hot")
PATH = "outputs.o.value"


@dataclasses.dataclass
class FakeResolver:
    """A Resolver over plain dicts, failing the way Ember's real resolvers must (Heat's errors)."""

    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    refs: dict[str, Any] = dataclasses.field(default_factory=dict)
    attrs: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    files: dict[str, str] = dataclasses.field(default_factory=dict)
    conditions: dict[str, bool] = dataclasses.field(default_factory=dict)
    facade_fields: dict[str, Any] = dataclasses.field(default_factory=dict)
    zones: list[str] = dataclasses.field(default_factory=list)

    def parameter(self, name: str) -> Any:
        if name not in self.params:
            raise errors.UserParameterMissing(name)
        return self.params[name]

    def reference(self, resource: str) -> Any:
        if resource not in self.refs:
            raise errors.InvalidTemplateReference(resource, "unknown")
        return self.refs[resource]

    def attribute(self, resource: str, attribute: str, path: Sequence[Any]) -> Any:
        if resource not in self.attrs:
            raise errors.InvalidTemplateReference(resource, "unknown")
        if attribute not in self.attrs[resource]:
            # Heat's resource proxy names the attribute together with its path.
            raise errors.InvalidTemplateAttribute(resource, str((attribute, *path)) if path else attribute)
        return select_path(self.attrs[resource][attribute], path)

    def all_attributes(self, resource: str) -> dict[str, Any]:
        if resource not in self.attrs:
            raise errors.InvalidTemplateReference(resource, "unknown")
        return dict(self.attrs[resource])

    def file(self, key: str) -> str | None:
        return self.files.get(key)

    def facade(self, field: str) -> Any:
        return self.facade_fields[field]

    def condition(self, name: str) -> bool:
        if name not in self.conditions:
            raise ValueError(f'Invalid condition "{name}"')
        return self.conditions[name]

    def availability_zones(self) -> list[str]:
        return list(self.zones)


def make_resolver(data: Mapping[str, Any]) -> FakeResolver:
    return FakeResolver(
        params=dict(data.get("params") or {}), refs=dict(data.get("refs") or {}),
        attrs={k: dict(v) for k, v in (data.get("attrs") or {}).items()},
        files=dict(data.get("files") or {}), conditions=dict(data.get("conditions") or {}),
        facade_fields=dict(data.get("facade") or {}))


def spec(date: str) -> versions.VersionSpec:
    return versions.lookup({"heat_template_version": date})


def parse(snippet: Any, date: str, resolver: base.Resolver | None = None, *,
          condition: bool = False, path: str = PATH) -> Any:
    # The stack's resources (for 2013-05-23's ``Ref``): those the resolver knows.
    names: frozenset[str] = frozenset()
    if isinstance(resolver, FakeResolver):
        names = frozenset(resolver.refs) | frozenset(resolver.attrs)
    ctx = spec(date).parse_context(resolver, resource_names=names)
    return base.parse(snippet, path, ctx.for_conditions() if condition else ctx)


def outcome(snippet: Any, date: str, resolver: FakeResolver, *, condition: bool = False,
            parse_resolver: bool = True, nullable: bool = False) -> tuple[str, Any]:
    """("value", v), ("removed", None) or ("error", "<Type>: <message>")."""
    try:
        parsed = parse(snippet, date, resolver if parse_resolver else None, condition=condition)
        base.validate(parsed, PATH)
        value = base.resolve(parsed, resolver, nullable=nullable)
    except Exception as exc:
        return "error", f"{type(exc).__name__}: {exc}"
    if value is base.REMOVED:
        return "removed", None
    return "value", value


@dataclasses.dataclass(frozen=True)
class Case:
    file: str
    data: Mapping[str, Any]
    date: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.data['id']}@{self.date}"

    def resolver(self, defaults: Mapping[str, Any]) -> FakeResolver:
        merged = {key: {**(defaults.get(key) or {}), **(self.data.get(key) or {})}
                  for key in ("params", "refs", "attrs", "files", "conditions", "facade")}
        return make_resolver(merged)


def _matches(date: str, constraint: Any) -> bool:
    if isinstance(constraint, list):
        return date in [str(d) for d in constraint]
    for term in str(constraint).split():
        if term.startswith(">=") and not date >= term[2:]:
            return False
        if term.startswith("<") and not term.startswith("<=") and not date < term[1:]:
            return False
        if term.startswith("==") and date != term[2:]:
            return False
    return True


def _has_function(date: str, snippet: Any) -> bool:
    if not (isinstance(snippet, Mapping) and len(snippet) == 1):
        return True
    cls = spec(date).functions.get(next(iter(snippet)))
    return cls is not None and cls is not Removed


def load(name: str) -> tuple[dict[str, Any], list[Case]]:
    document = yaml.safe_load((FIXTURES / name).read_text())
    defaults = document.get("resolver") or {}
    cases = []
    for data in document["cases"]:
        constraint = data.get("versions")
        for date in HOT_DATES:
            chosen = (_matches(date, constraint) if constraint is not None
                      else _has_function(date, data["snippet"]))
            if chosen:
                cases.append(Case(name, data, date))
    return defaults, cases


def all_cases() -> Iterator[tuple[dict[str, Any], Case]]:
    for path in sorted(FIXTURES.glob("*.yaml")):
        defaults, cases = load(path.name)
        for case in cases:
            yield defaults, case
