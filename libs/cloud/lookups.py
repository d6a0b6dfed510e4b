"""Custom constraints checked against the cloud (``nova.flavor``, ``glance.image``...), as data.

Checking ``custom_constraint: nova.flavor`` needs the cloud, but template
validation is pure and runs in the evaluation pool. So validation is run with
:class:`CloudChecks`: a value it has no answers for passes and is noted as a
:class:`Lookup`; the edge (the api) makes each lookup's :class:`CloudCall`
items through the caller and runs validation again with the answers, which
:func:`reason` judges with Heat's words. A lookup asks what Heat's client
plugins ask (a get by id, a listing by name) through openstacksdk's proxies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from libs.cloud.calls import Answer, Answers, CloudCall, Service
from libs.template.custom_constraints import CustomConstraintRegistry, default_custom_constraints


@dataclasses.dataclass(frozen=True)
class Lookup:
    """One value of one cloud-checked constraint."""

    constraint: str
    value: str

    def key(self, part: str) -> str:
        return f"{self.constraint}:{part}:{self.value}"


class CloudLookupsNeeded(Exception):
    """Validation met cloud-checked values it has no answers for (picklable: it leaves the pool)."""

    def __init__(self, lookups: Iterable[Lookup]) -> None:
        self.lookups = tuple(sorted(set(lookups), key=lambda lookup: (lookup.constraint, lookup.value)))
        super().__init__(self.lookups)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CloudLookupsNeeded, (self.lookups,))


# neutronclient looks a value up by id only when it starts like a UUID.
_NEUTRON_ID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")


def _uuid_like(value: str) -> bool:
    """oslo's is_uuid_like: a UUID in any of the spellings uuid.UUID takes, dashes anywhere."""
    try:
        parsed = uuid.UUID(value)
    except (ValueError, TypeError, AttributeError):
        return False
    bare = value.lower().removeprefix("urn:").removeprefix("uuid:").strip("{}").replace("-", "")
    return parsed.hex == bare


# ---- each constraint: its calls, and its verdict over the answers -------------------------------

@dataclasses.dataclass(frozen=True)
class _Getter:
    """A get by id (or name) whose 404 is the failure: Heat's ``EntityNotFound`` text."""

    service: Service
    method: str
    entity: str
    skip_empty: bool = False

    def calls(self, lookup: Lookup) -> tuple[CloudCall, ...]:
        if self.skip_empty and not lookup.value:
            return ()
        return (CloudCall(lookup.key("get"), self.service, self.method, (lookup.value,)),)

    def reason(self, lookup: Lookup, answers: Answers) -> str | None:
        if self.skip_empty and not lookup.value:
            return None
        answer = answers[lookup.key("get")]
        if answer.ok:
            return None
        if answer.not_found:
            return self.missing(lookup.value)
        return _cloud_failure(answer)

    def missing(self, value: str) -> str:
        return f"The {self.entity} ({value}) could not be found."


@dataclasses.dataclass(frozen=True)
class _Finder:
    """A get by id when the value looks like one, then a listing by name (Glance's and Neutron's way)."""

    service: Service
    getter: str
    lister: str
    by_id: Callable[[str], bool]
    missing: Callable[[str], str]
    ambiguous: Callable[[str], str]
    extension: str | None = None

    def calls(self, lookup: Lookup) -> tuple[CloudCall, ...]:
        calls = [CloudCall(lookup.key("name"), self.service, self.lister, kwargs={"name": lookup.value})]
        if self.by_id(lookup.value):
            calls.append(CloudCall(lookup.key("id"), self.service, self.getter, (lookup.value,)))
        if self.extension is not None:
            calls.append(CloudCall(lookup.key("extension"), Service.NETWORK, "find_extension",
                                   (self.extension,)))
        return tuple(calls)

    def reason(self, lookup: Lookup, answers: Answers) -> str | None:
        if self.extension is not None:
            found = answers[lookup.key("extension")]
            if not found.ok:
                return _cloud_failure(found)
            if found.value is None:
                return f"The neutron extension ({self.extension}) could not be found."
        by_id = answers.get(lookup.key("id"))
        if by_id is not None:
            if by_id.ok:
                return None
            if not by_id.not_found:
                return _cloud_failure(by_id)
        by_name = answers[lookup.key("name")]
        if not by_name.ok:
            return _cloud_failure(by_name)
        matches = len(by_name.value or ())
        if matches == 1:
            return None
        return self.missing(lookup.value) if matches == 0 else self.ambiguous(lookup.value)


@dataclasses.dataclass(frozen=True)
class _Flavor:
    """novaclient's get by id, then ``find(name=...)``: openstacksdk's ``find_flavor`` does both."""

    def calls(self, lookup: Lookup) -> tuple[CloudCall, ...]:
        return (CloudCall(lookup.key("find"), Service.COMPUTE, "find_flavor", (lookup.value,),
                          {"ignore_missing": False}),)

    def reason(self, lookup: Lookup, answers: Answers) -> str | None:
        answer = answers[lookup.key("find")]
        if answer.ok:
            return None
        if answer.not_found:
            return self.missing(lookup.value)
        if answer.error is not None and answer.error.exception == "DuplicateResource":
            return f"Multiple Flavor matches found for {_by_name(lookup.value)}."
        return _cloud_failure(answer)

    def missing(self, value: str) -> str:
        return f"No Flavor matching {_by_name(value)}. (HTTP 404)"


@dataclasses.dataclass(frozen=True)
class _VolumeType:
    """Heat lists every volume type and takes the one whose name or id is the value."""

    def calls(self, lookup: Lookup) -> tuple[CloudCall, ...]:
        return (CloudCall(lookup.key("types"), Service.BLOCK_STORAGE, "types"),)

    def reason(self, lookup: Lookup, answers: Answers) -> str | None:
        answer = answers[lookup.key("types")]
        if not answer.ok:
            return _cloud_failure(answer)
        if any(lookup.value in (t.get("name"), t.get("id")) for t in answer.value or ()):
            return None
        return self.missing(lookup.value)

    def missing(self, value: str) -> str:
        return f"The VolumeType ({value}) could not be found."


def _by_name(value: str) -> str:
    """How Heat's clients print the filter they found nothing for: a Python dict's repr."""
    return repr({"name": value})


def _cloud_failure(answer: Answer) -> str:
    """A lookup the cloud refused for another reason than absence: its own words."""
    assert answer.error is not None
    return answer.error.message


def _neutron(resource: str, getter: str, lister: str, extension: str | None = None) -> _Finder:
    return _Finder(
        Service.NETWORK, getter, lister, lambda value: _NEUTRON_ID.match(value) is not None,
        lambda value: f"Unable to find {resource} with name or id '{value}'",
        lambda value: f"Multiple {resource} matches found for name '{value}', use an ID to be more specific.",
        extension)


_Check = _Getter | _Finder | _Flavor | _VolumeType

CLOUD_CONSTRAINTS: Mapping[str, _Check] = {
    "nova.flavor": _Flavor(),
    "nova.keypair": _Getter(Service.COMPUTE, "get_keypair", "Key", skip_empty=True),
    "nova.server": _Getter(Service.COMPUTE, "get_server", "Server"),
    "glance.image": _Finder(Service.IMAGE, "get_image", "images", _uuid_like,
                            lambda value: f"No images matching {_by_name(value)}.",
                            lambda value: f"No images unique match found for {_by_name(value)}."),
    "neutron.network": _neutron("network", "get_network", "networks"),
    "neutron.subnet": _neutron("subnet", "get_subnet", "subnets"),
    "neutron.port": _neutron("port", "get_port", "ports"),
    "neutron.router": _neutron("router", "get_router", "routers"),
    "neutron.security_group": _neutron("security_group", "get_security_group", "security_groups"),
    "neutron.qos_policy": _neutron("policy", "get_qos_policy", "qos_policies", extension="qos"),
    "cinder.volume": _Getter(Service.BLOCK_STORAGE, "get_volume", "Volume"),
    "cinder.snapshot": _Getter(Service.BLOCK_STORAGE, "get_snapshot", "VolumeSnapshot"),
    "cinder.vtype": _VolumeType(),
    "cinder.backup": _Getter(Service.BLOCK_STORAGE, "get_backup", "Volume backup"),
    "neutron.subnetpool": _neutron("subnetpool", "get_subnet_pool", "subnet_pools"),
}


# Constraints validation lets pass but whose plugins look their values up: only their words.
_LOOKED_UP_BY_PLUGINS_ONLY: Mapping[str, _Check] = {
    "neutron.address_scope": _neutron("address_scope", "get_address_scope", "address_scopes"),
}


def missing(constraint: str, value: Any) -> str:
    """Heat's reason for a value of ``constraint`` the cloud does not know (validation's and the plugins')."""
    check = CLOUD_CONSTRAINTS.get(constraint) or _LOOKED_UP_BY_PLUGINS_ONLY.get(constraint)
    return check.missing(str(value)) if check is not None else f"{value} could not be found"


def calls_for(lookups: Iterable[Lookup]) -> list[CloudCall]:
    """Every call the lookups need, each once."""
    calls: dict[str, CloudCall] = {}
    for lookup in lookups:
        for call in CLOUD_CONSTRAINTS[lookup.constraint].calls(lookup):
            calls.setdefault(call.key, call)
    return list(calls.values())


def reason(lookup: Lookup, answers: Answers) -> str | None:
    """None when the cloud has the thing, else Heat's reason (``Error validating value 'v': <reason>``)."""
    return CLOUD_CONSTRAINTS[lookup.constraint].reason(lookup, answers)


class CloudChecks:
    """Custom constraints with the cloud's ones judged from ``answers`` (None: none made yet).

    ``registry`` is what validation takes; afterwards ``wanted`` holds the lookups it
    met without answers (they passed), and :meth:`raise_if_wanting` reports them.
    """

    def __init__(self, answers: Answers | None = None, base: CustomConstraintRegistry | None = None) -> None:
        self._answers: Answers = answers or {}
        self.wanted: set[Lookup] = set()
        self.registry = base or default_custom_constraints()
        for name in CLOUD_CONSTRAINTS:
            self.registry.register(name, self._checker(name))

    def _checker(self, name: str) -> Callable[[Any], str | None]:
        def check(value: Any) -> str | None:
            lookup = Lookup(name, str(value))
            if any(call.key not in self._answers for call in CLOUD_CONSTRAINTS[name].calls(lookup)):
                self.wanted.add(lookup)
                return None
            return reason(lookup, self._answers)
        return check

    def raise_if_wanting(self) -> None:
        if self.wanted:
            raise CloudLookupsNeeded(self.wanted)


@dataclasses.dataclass(frozen=True)
class CloudAnswers:
    """What a pure check knows of the cloud (it crosses to the evaluation pool).

    ``answers`` so far; with ``ask``, a value without answers makes the check raise
    :class:`CloudLookupsNeeded` (the edge makes them and checks again), without,
    it passes (where no cloud can be asked, as a nested stack's check in a worker).
    """

    ask: bool = False
    answers: Mapping[str, Answer] = dataclasses.field(default_factory=dict)

    @contextlib.contextmanager
    def checking(self) -> Iterator[CustomConstraintRegistry]:
        """The custom constraints a validation inside the block takes."""
        checks = CloudChecks(self.answers)
        try:
            yield checks.registry
        except Exception:
            # A failure after a value not looked up yet may not be the first one.
            if self.ask:
                checks.raise_if_wanting()
            raise
        if self.ask:
            checks.raise_if_wanting()
