"""The environment's ``convergence`` section (Ember's own): what drift the observer sees does.

::

    convergence:
      policy: heal              # observe (report only) | heal (converge the drifted resources)
      interval: 30              # seconds between listings of its resources (else the type's)
      resources:
        web*:                   # a resource name or a glob pattern, as resource_registry's
          policy: observe
          fields: {metadata: accept, name: ignore}   # per property: revert | accept | ignore

``heal`` reverts every drifted property unless a field says otherwise; ``accept`` takes
the cloud's value into Ember's record of the resource; ``ignore`` is not drift at all.
A stack without the section follows the installation's default (``EMBER_DRIFT_POLICY``).
Parsed once into frozen data; a bad section is Heat's ``InvalidEnvironment`` (400).
"""

from __future__ import annotations

import dataclasses
import enum
import fnmatch
from collections.abc import Mapping
from typing import Any

from libs.template.errors import InvalidEnvironment

SECTION = "convergence"
# The shortest interval a stack may ask: every listing is a cloud call per type and project.
MIN_INTERVAL = 1.0


class DriftPolicy(enum.StrEnum):
    OBSERVE = "observe"
    HEAL = "heal"


class FieldPolicy(enum.StrEnum):
    REVERT = "revert"
    ACCEPT = "accept"
    IGNORE = "ignore"


@dataclasses.dataclass(frozen=True)
class ResourcePolicy:
    policy: DriftPolicy
    fields: Mapping[str, FieldPolicy] = dataclasses.field(default_factory=dict)

    def field(self, name: str) -> FieldPolicy:
        return self.fields.get(name, FieldPolicy.REVERT)


@dataclasses.dataclass(frozen=True)
class ConvergencePolicy:
    policy: DriftPolicy
    # (name or pattern, its policy), as written: an exact name wins over patterns, then the first match.
    resources: tuple[tuple[str, ResourcePolicy], ...] = ()
    # Seconds between the observer's listings of this stack's resources (None: the type's interval).
    interval: float | None = None

    def for_resource(self, name: str) -> ResourcePolicy:
        exact = [p for pattern, p in self.resources if pattern == name]
        if exact:
            return exact[0]
        for pattern, p in self.resources:
            if fnmatch.fnmatchcase(name, pattern):
                return p
        return ResourcePolicy(self.policy)


def parse(section: Any, default: DriftPolicy = DriftPolicy.OBSERVE) -> ConvergencePolicy:
    """The section as policy; ``default`` where it names none."""
    if section is None or section == {}:
        return ConvergencePolicy(default)
    if not isinstance(section, Mapping):
        raise InvalidEnvironment(f"{SECTION}: expected a map, got {type(section).__name__}")
    _known(section, ("policy", "interval", "resources"), SECTION)
    policy = _policy(section.get("policy", default), f"{SECTION}.policy")
    interval = _interval(section.get("interval"), f"{SECTION}.interval")
    resources = section.get("resources", {})
    if not isinstance(resources, Mapping):
        raise InvalidEnvironment(f"{SECTION}.resources: expected a map of resource names")
    parsed = []
    for name, spec in resources.items():
        where = f"{SECTION}.resources.{name}"
        if not isinstance(spec, Mapping):
            raise InvalidEnvironment(f"{where}: expected a map with policy and/or fields")
        _known(spec, ("policy", "fields"), where)
        fields = spec.get("fields", {})
        if not isinstance(fields, Mapping):
            raise InvalidEnvironment(f"{where}.fields: expected a map of property names")
        parsed.append((str(name), ResourcePolicy(
            _policy(spec.get("policy", policy), f"{where}.policy"),
            {str(k): _field(v, f"{where}.fields.{k}") for k, v in fields.items()})))
    return ConvergencePolicy(policy, tuple(parsed), interval)


def _known(spec: Mapping[str, Any], keys: tuple[str, ...], where: str) -> None:
    unknown = sorted(str(k) for k in spec if k not in keys)
    if unknown:
        raise InvalidEnvironment(f"{where}: unknown key {unknown[0]!r} (expected {', '.join(keys)})")


def _policy(value: Any, where: str) -> DriftPolicy:
    try:
        return DriftPolicy(value)
    except ValueError:
        raise InvalidEnvironment(f"{where}: {value!r} is not one of observe, heal") from None


def _interval(value: Any, where: str) -> float | None:
    if value is None:
        return None
    # bool is an int to Python, never a number of seconds to a template author.
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= MIN_INTERVAL:
        raise InvalidEnvironment(
            f"{where}: {value!r} is not a number of seconds of at least {MIN_INTERVAL:g}")
    return float(value)


def _field(value: Any, where: str) -> FieldPolicy:
    try:
        return FieldPolicy(value)
    except ValueError:
        raise InvalidEnvironment(f"{where}: {value!r} is not one of revert, accept, ignore") from None
