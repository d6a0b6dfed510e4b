"""Heat's custom constraints that ask a cloud (``nova.flavor``, ``glance.image``, ``neutron.network``...).

Validation itself is pure and lets these values pass (see
``libs.template.custom_constraints.CLOUD_CONSTRAINTS``); what checks them is a
lookup call made through the cloud caller, and this module says which call and
what Heat answers when the cloud does not know the value. The plugins use it when
their first step resolves a name; whoever validates a stack against its cloud may
make the same calls (:func:`lookup_call`) and read them (:func:`failure`).

Heat's words for a value the cloud does not know are validation's
(:func:`libs.cloud.lookups.missing`): one table for both.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from libs.cloud import lookups
from libs.cloud.calls import Answer, CloudCall, ErrorKind, Service


@dataclasses.dataclass(frozen=True)
class Lookup:
    """The proxy's ``find_*`` that resolves a name or id (404 when the cloud does not know it)."""

    service: Service
    method: str


LOOKUPS: Final[dict[str, Lookup]] = {
    "nova.flavor": Lookup(Service.COMPUTE, "find_flavor"),
    "nova.keypair": Lookup(Service.COMPUTE, "find_keypair"),
    "nova.server": Lookup(Service.COMPUTE, "find_server"),
    "glance.image": Lookup(Service.IMAGE, "find_image"),
    "cinder.volume": Lookup(Service.BLOCK_STORAGE, "find_volume"),
    "cinder.snapshot": Lookup(Service.BLOCK_STORAGE, "find_snapshot"),
    "cinder.vtype": Lookup(Service.BLOCK_STORAGE, "find_type"),
    "cinder.backup": Lookup(Service.BLOCK_STORAGE, "find_backup"),
    **{f"neutron.{name}": Lookup(Service.NETWORK, f"find_{method}") for name, method in (
        ("network", "network"), ("subnet", "subnet"), ("port", "port"), ("router", "router"),
        ("security_group", "security_group"), ("subnetpool", "subnet_pool"),
        ("qos_policy", "qos_policy"), ("address_scope", "address_scope"))},
}


def lookup_call(key: str, constraint: str, value: Any) -> CloudCall | None:
    """The call that finds ``value`` (404 when the cloud does not know it), or None for other constraints."""
    found = LOOKUPS.get(constraint)
    if found is None:
        return None
    return CloudCall(key, found.service, found.method, args=(value,), kwargs={"ignore_missing": False})


def reason(constraint: str, value: Any) -> str:
    """Heat's reason for a value the cloud does not know."""
    return lookups.missing(constraint, value)


def failure(constraint: str, value: Any, answer: Answer) -> str | None:
    """Heat's message for the constraint given the lookup's answer; None when the value is known.

    Only a 404 says the value is wrong; any other error is the cloud's, not the template's.
    """
    if answer.error is None or answer.error.kind is not ErrorKind.NOT_FOUND:
        return None
    return f"Error validating value '{value}': {reason(constraint, value)}"
