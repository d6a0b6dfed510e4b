"""Heat's custom constraints that ask a cloud (``nova.flavor``, ``glance.image``, ``neutron.network``...).

Validation itself is pure and lets these values pass (see
``libs.template.custom_constraints.CLOUD_CONSTRAINTS``); what checks them is a
lookup call made through the cloud caller, and this module says which call and
what Heat answers when the cloud does not know the value. The plugins use it when
their first step resolves a name; whoever validates a stack against its cloud may
make the same calls (:func:`lookup_call`) and read them (:func:`failure`).

The reasons are Heat's, which differ by client: Nova's flavor lookup prints
novaclient's "No Flavor matching ...", Glance's its own "No images matching ...",
Heat's own ``EntityNotFound`` for key pairs and Cinder, neutronclient's "Unable to
find <kind> with name or id ..." for Neutron.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Final

from libs.cloud.calls import Answer, CloudCall, ErrorKind, Service


@dataclasses.dataclass(frozen=True)
class Lookup:
    service: Service
    method: str
    reason: Callable[[Any], str]


def _entity(entity: str) -> Callable[[Any], str]:
    return lambda value: f"The {entity} ({value}) could not be found."


def _neutron(kind: str) -> Callable[[Any], str]:
    return lambda value: f"Unable to find {kind} with name or id '{value}'"


LOOKUPS: Final[dict[str, Lookup]] = {
    "nova.flavor": Lookup(Service.COMPUTE, "find_flavor",
                          lambda value: f"No Flavor matching {{'name': '{value}'}}. (HTTP 404)"),
    "nova.keypair": Lookup(Service.COMPUTE, "find_keypair", _entity("Key")),
    "nova.server": Lookup(Service.COMPUTE, "find_server", _entity("Server")),
    "glance.image": Lookup(Service.IMAGE, "find_image",
                           lambda value: f"No images matching {{'name': '{value}'}}."),
    "cinder.volume": Lookup(Service.BLOCK_STORAGE, "find_volume", _entity("Volume")),
    "cinder.snapshot": Lookup(Service.BLOCK_STORAGE, "find_snapshot", _entity("VolumeSnapshot")),
    "cinder.vtype": Lookup(Service.BLOCK_STORAGE, "find_type", _entity("VolumeType")),
    "cinder.backup": Lookup(Service.BLOCK_STORAGE, "find_backup", _entity("Volume backup")),
    **{f"neutron.{name}": Lookup(Service.NETWORK, f"find_{method}", _neutron(kind))
       for name, method, kind in (
        ("network", "network", "network"), ("subnet", "subnet", "subnet"), ("port", "port", "port"),
        ("router", "router", "router"), ("security_group", "security_group", "security_group"),
        ("subnetpool", "subnet_pool", "subnetpool"), ("qos_policy", "qos_policy", "policy"),
        ("address_scope", "address_scope", "address_scope"))},
}


def lookup_call(key: str, constraint: str, value: Any) -> CloudCall | None:
    """The call that finds ``value`` (404 when the cloud does not know it), or None for other constraints."""
    found = LOOKUPS.get(constraint)
    if found is None:
        return None
    return CloudCall(key, found.service, found.method, args=(value,), kwargs={"ignore_missing": False})


def reason(constraint: str, value: Any) -> str:
    """Heat's reason for a value the cloud does not know."""
    found = LOOKUPS.get(constraint)
    return found.reason(value) if found is not None else f"{value} could not be found"


def failure(constraint: str, value: Any, answer: Answer) -> str | None:
    """Heat's message for the constraint given the lookup's answer; None when the value is known.

    Only a 404 says the value is wrong; any other error is the cloud's, not the template's.
    """
    if answer.error is None or answer.error.kind is not ErrorKind.NOT_FOUND:
        return None
    return f"Error validating value '{value}': {reason(constraint, value)}"
