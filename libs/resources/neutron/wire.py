"""Reading what Neutron answered, and naming what a plugin asks for.

Answers are openstacksdk resources as ``to_dict()`` gives them: by default with the
sdk's attribute names (``is_admin_state_up``, ``subnet_ids``), which are not the
names Heat's attributes and ``show`` use (Neutron's own: ``admin_state_up``,
``subnets``). :func:`neutron_view` turns either naming into Neutron's, so a plugin
reads one spelling whatever the caller's ``to_dict`` options were.

A template may name a network, subnet, port, router, security group or QoS policy
by name or by id; Neutron's API takes ids. A :class:`Ref` is one such value; a value
that is already a UUID is used as it is, any other is looked up with the sdk's
``find_<kind>`` first (Heat's translation rules do the same through its client).
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from libs.cloud.calls import Answers, CloudCall, CloudError, ErrorKind, Service
from libs.resources.steps import Failed

# The sdk's attribute names of Neutron's fields, where they differ.
_SDK_NAMES: Final[Mapping[str, str]] = {
    "is_admin_state_up": "admin_state_up",
    "is_shared": "shared",
    "subnet_ids": "subnets",
    "is_port_security_enabled": "port_security_enabled",
    "is_router_external": "router:external",
    "provider_network_type": "provider:network_type",
    "provider_physical_network": "provider:physical_network",
    "provider_segmentation_id": "provider:segmentation_id",
    "is_vlan_transparent": "vlan_transparent",
    "is_vlan_qinq": "vlan_qinq",
    "ipv4_address_scope_id": "ipv4_address_scope",
    "ipv6_address_scope_id": "ipv6_address_scope",
    "is_dhcp_enabled": "enable_dhcp",
    "prefix_length": "prefixlen",
    "subnet_pool_id": "subnetpool_id",
    "binding_host_id": "binding:host_id",
    "binding_profile": "binding:profile",
    "binding_vif_details": "binding:vif_details",
    "binding_vif_type": "binding:vif_type",
    "binding_vnic_type": "binding:vnic_type",
    "security_group_ids": "security_groups",
    "is_distributed": "distributed",
    "is_ha": "ha",
    "ether_type": "ethertype",
}
# Keys of to_dict() that are the sdk's own, not Neutron's.
_SDK_ONLY: Final = frozenset({"location"})

_UUID: Final = re.compile(r"^[0-9a-f]{8}-?([0-9a-f]{4}-?){3}[0-9a-f]{12}$", re.IGNORECASE)


def neutron_view(obj: Mapping[str, Any] | None) -> dict[str, Any]:
    """An answer with Neutron's field names (``tenant_id`` filled from ``project_id``)."""
    if not obj:
        return {}
    view: dict[str, Any] = {}
    for key, value in obj.items():
        if key in _SDK_ONLY:
            continue
        name = _SDK_NAMES.get(key, key)
        if value is not None or name not in view:
            view[name] = value
    if view.get("tenant_id") is None and view.get("project_id") is not None:
        view["tenant_id"] = view["project_id"]
    return view


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def is_uuid(value: Any) -> bool:
    return isinstance(value, str) and _UUID.match(value) is not None


# neutronclient's exceptions: one per Neutron fault type it knows (``<type>Client``), else per status.
_NEUTRONCLIENT_TYPES: Final = frozenset({
    "NetworkNotFound", "PortNotFound", "StateInvalid", "NetworkInUse", "PortInUse", "IpAddressInUse",
    "IpAddressAlreadyAllocated", "InvalidIpForNetwork", "InvalidIpForSubnet", "OverQuota",
    "IpAddressGenerationFailure", "MacAddressInUse", "HostNotCompatibleWithFixedIps",
    "ExternalIpAddressExhausted"})
_NEUTRONCLIENT_STATUS: Final[Mapping[int, str]] = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
    500: "InternalServerError", 503: "ServiceUnavailable"}


def failed(error: CloudError) -> Failed:
    """The resource fails with Neutron's refusal as Heat's neutronclient names and prints it
    (``InvalidIpForSubnetClient: ...`` and the request id on a line of its own; measured against
    real Heat and Neutron); an error nothing answered keeps the sdk's name."""
    if error.status is None:
        return Failed(error.message, error.exception)
    if error.fault_type in _NEUTRONCLIENT_TYPES:
        name = f"{error.fault_type}Client"
    else:
        name = _NEUTRONCLIENT_STATUS.get(error.status, "NeutronClientException")
    text = error.message
    if error.request_id:
        text += f"\nNeutron server returns request_ids: {[error.request_id]!r}"
    return Failed(text, name)


def without(tags: Iterable[Any] | None, tag: str) -> list[Any]:
    """The user's tags of an object: all but Ember's own."""
    return [t for t in tags or () if t != tag]


class Kind(enum.StrEnum):
    """What a name may stand for; the sdk's ``find_<kind>`` looks it up."""

    NETWORK = "network"
    SUBNET = "subnet"
    PORT = "port"
    ROUTER = "router"
    SECURITY_GROUP = "security_group"
    QOS_POLICY = "qos_policy"


@dataclasses.dataclass(frozen=True)
class Ref:
    """A value naming a Neutron object by name or id."""

    kind: Kind
    value: str

    @property
    def key(self) -> str:
        return f"find:{self.kind.value}:{self.value}"

    def call(self) -> CloudCall:
        return CloudCall(self.key, Service.NETWORK, f"find_{self.kind.value}", args=(self.value,),
                         kwargs={"ignore_missing": False})


def lookups(refs: Iterable[Ref]) -> tuple[CloudCall, ...]:
    """The find calls for every ref not already an id, each once."""
    wanted = {r.key: r for r in refs if r.value and not is_uuid(r.value)}
    return tuple(r.call() for r in wanted.values())


def found_ids(calls: Iterable[CloudCall], answers: Answers) -> dict[str, str] | Failed | None:
    """The ids the finds gave (by call key), the first failure, or None when an answer was lost."""
    ids: dict[str, str] = {}
    for call in calls:
        answer = answers.get(call.key)
        if answer is None:
            return None
        if answer.error is not None:
            if call.method == f"find_{Kind.SECURITY_GROUP.value}":
                return security_group_failure(str(call.args[0]), answer.error)
            return failed(answer.error)
        ids[call.key] = str(neutron_view(answer.value).get("id"))
    return ids


def security_group_failure(name: str, error: CloudError) -> Failed:
    """A security group name the project does not have, or has twice: Heat's own errors (it lists
    the project's groups and matches the name itself), measured against real Heat and Neutron."""
    if error.kind is ErrorKind.NOT_FOUND:
        return Failed(f"The Resource ({name}) could not be found.", "EntityNotFound")
    if error.exception == "DuplicateResource":
        return Failed(f"Multiple physical resources were found with name ({name}).",
                      "PhysicalResourceNameAmbiguity")
    return failed(error)


class Resolver:
    """Names to ids, as the lookups found them."""

    def __init__(self, ids: Mapping[str, str]) -> None:
        self._ids = ids

    def __call__(self, kind: Kind, value: Any) -> Any:
        if not isinstance(value, str) or not value or is_uuid(value):
            return value
        return self._ids.get(Ref(kind, value).key, value)
