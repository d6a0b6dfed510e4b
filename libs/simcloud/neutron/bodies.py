"""Neutron's objects as JSON bodies, pure: each kind's table, its defaults, rows to bodies and back.

A row holds the columns lists filter on (and Nova reads); ``data`` holds the rest of
Neutron's fields. A body is Neutron's JSON: defaults, then ``data``, then the columns.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Iterable, Mapping
from typing import Any

import asyncpg

from libs.simcloud.errors import ApiError, bad_request
from libs.simcloud.state import iso

Body = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class KindInfo:
    table: str
    collection: str          # the list answer's key: "networks", "security_groups"
    path: str                # the URL segment: "networks", "security-groups"
    member: str              # one object's key: "network", "security_group"
    noun: str                # in messages: "Network", "Security group"
    columns: tuple[str, ...]  # body attributes kept as columns (besides id, project_id, tags, times)
    creatable: frozenset[str]
    updatable: frozenset[str]

    @property
    def not_found_type(self) -> str:
        return self.noun.title().replace(" ", "").replace("Ip", "IP") + "NotFound"


# Tags come by the tags API; a create may not carry them (Neutron's stock ML2: 400, ports: dropped).
_COMMON = ("name", "description")


class Kind(enum.Enum):
    NETWORK = KindInfo(
        "simcloud.networks", "networks", "networks", "network", "Network",
        ("name", "status", "router:external", "shared"),
        frozenset({*_COMMON, "admin_state_up", "mtu", "shared", "router:external", "port_security_enabled",
                   "project_id", "tenant_id", "availability_zone_hints", "dns_domain", "qos_policy_id",
                   "provider:network_type", "provider:physical_network", "provider:segmentation_id",
                   "segments", "is_default"}),
        frozenset({"name", "description", "admin_state_up", "mtu", "shared", "router:external",
                   "port_security_enabled", "dns_domain", "qos_policy_id", "is_default"}))
    SUBNET = KindInfo(
        "simcloud.subnets", "subnets", "subnets", "subnet", "Subnet",
        ("name", "network_id", "cidr", "ip_version", "gateway_ip"),
        frozenset({*_COMMON, "network_id", "cidr", "ip_version", "gateway_ip", "allocation_pools",
                   "dns_nameservers", "host_routes", "enable_dhcp", "project_id", "tenant_id",
                   "ipv6_ra_mode", "ipv6_address_mode", "subnetpool_id", "prefixlen", "segment_id",
                   "service_types", "use_default_subnetpool", "dns_publish_fixed_ip"}),
        frozenset({"name", "description", "gateway_ip", "allocation_pools", "dns_nameservers",
                   "host_routes", "enable_dhcp", "service_types", "segment_id", "dns_publish_fixed_ip"}))
    PORT = KindInfo(
        "simcloud.ports", "ports", "ports", "port", "Port",
        ("name", "network_id", "mac_address", "fixed_ips", "device_id", "device_owner", "status",
         "admin_state_up"),
        frozenset({*_COMMON, "network_id", "fixed_ips", "mac_address", "device_id", "device_owner",
                   "admin_state_up", "security_groups", "allowed_address_pairs", "port_security_enabled",
                   "binding:host_id", "binding:vnic_type", "binding:profile", "extra_dhcp_opts",
                   "project_id", "tenant_id", "qos_policy_id", "dns_name", "propagate_uplink_status"}),
        frozenset({"name", "description", "fixed_ips", "device_id", "device_owner", "admin_state_up",
                   "security_groups", "allowed_address_pairs", "port_security_enabled", "binding:host_id",
                   "binding:vnic_type", "binding:profile", "extra_dhcp_opts", "qos_policy_id", "dns_name",
                   "mac_address", "propagate_uplink_status"}))
    ROUTER = KindInfo(
        "simcloud.routers", "routers", "routers", "router", "Router",
        ("name", "status"),
        frozenset({*_COMMON, "admin_state_up", "external_gateway_info", "project_id", "tenant_id",
                   "distributed", "ha", "availability_zone_hints", "flavor_id", "routes"}),
        frozenset({"name", "description", "admin_state_up", "external_gateway_info", "routes",
                   "distributed", "ha"}))
    FLOATINGIP = KindInfo(
        "simcloud.floatingips", "floatingips", "floatingips", "floatingip", "Floating IP",
        ("floating_network_id", "floating_ip_address", "port_id", "fixed_ip_address", "status"),
        frozenset({"description", "floating_network_id", "floating_ip_address", "port_id",
                   "fixed_ip_address", "subnet_id", "project_id", "tenant_id", "dns_name", "dns_domain",
                   "qos_policy_id"}),
        frozenset({"description", "port_id", "fixed_ip_address", "qos_policy_id"}))
    SECURITY_GROUP = KindInfo(
        "simcloud.security_groups", "security_groups", "security-groups", "security_group",
        "Security group", ("name",),
        frozenset({*_COMMON, "project_id", "tenant_id", "stateful", "shared"}),
        frozenset({"name", "description", "stateful"}))
    SECURITY_GROUP_RULE = KindInfo(
        "simcloud.security_group_rules", "security_group_rules", "security-group-rules",
        "security_group_rule", "Security group rule", ("security_group_id",),
        frozenset({"description", "security_group_id", "direction", "ethertype", "protocol",
                   "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id",
                   "remote_address_group_id", "project_id", "tenant_id"}),
        frozenset())

    @property
    def info(self) -> KindInfo:
        return self.value


BY_PATH = {kind.info.path: kind for kind in Kind}
# The row column a body attribute is kept in, where the names differ.
_COLUMN_OF = {"router:external": "external"}
_TAGGED = frozenset(Kind) - {Kind.SECURITY_GROUP_RULE}


def not_found(kind: Kind, ident: str) -> ApiError:
    info = kind.info
    if kind is Kind.FLOATINGIP:
        return ApiError(404, f"Floating IP {ident} could not be found", "FloatingIPNotFound")
    return ApiError(404, f"{info.noun} {ident} could not be found.", info.not_found_type)


def defaults(kind: Kind) -> Body:
    """The fields Neutron shows on an object of ``kind`` that nobody set."""
    base: Body = {"description": "", "revision_number": 0}
    if kind in _TAGGED:
        base["tags"] = []
    if kind is Kind.NETWORK:
        base.update({"admin_state_up": True, "mtu": 1442, "status": "ACTIVE", "subnets": [], "shared": False,
                     "availability_zone_hints": [], "availability_zones": ["nova"],
                     "ipv4_address_scope": None, "ipv6_address_scope": None, "router:external": False,
                     "port_security_enabled": True, "qos_policy_id": None, "l2_adjacency": True,
                     "is_default": False, "dns_domain": "", "provider:network_type": "geneve",
                     "provider:physical_network": None, "provider:segmentation_id": None})
    elif kind is Kind.SUBNET:
        base.update({"ip_version": 4, "subnetpool_id": None, "enable_dhcp": True, "ipv6_ra_mode": None,
                     "ipv6_address_mode": None, "gateway_ip": None, "allocation_pools": [],
                     "host_routes": [], "dns_nameservers": [], "service_types": [], "segment_id": None,
                     "dns_publish_fixed_ip": False})
    elif kind is Kind.PORT:
        base.update({"admin_state_up": True, "status": "DOWN", "device_id": "", "device_owner": "",
                     "fixed_ips": [], "allowed_address_pairs": [], "extra_dhcp_opts": [],
                     "security_groups": [], "port_security_enabled": True, "binding:vnic_type": "normal",
                     "binding:host_id": "", "binding:profile": {}, "binding:vif_type": "unbound",
                     "binding:vif_details": {}, "qos_policy_id": None, "qos_network_policy_id": None,
                     "propagate_uplink_status": False, "ip_allocation": "immediate", "dns_name": "",
                     "dns_assignment": [], "resource_request": None})
    elif kind is Kind.ROUTER:
        base.update({"admin_state_up": True, "status": "ACTIVE", "external_gateway_info": None,
                     "routes": [], "distributed": False, "ha": False, "availability_zone_hints": [],
                     "availability_zones": ["nova"], "flavor_id": None})
    elif kind is Kind.FLOATINGIP:
        base.update({"port_id": None, "fixed_ip_address": None, "router_id": None, "status": "DOWN",
                     "port_details": None, "qos_policy_id": None, "dns_name": "", "dns_domain": "",
                     "port_forwardings": []})
    elif kind is Kind.SECURITY_GROUP:
        base.update({"security_group_rules": [], "stateful": True, "shared": False})
    else:
        base.update({"remote_address_group_id": None, "normalized_cidr": None,
                     "belongs_to_default_sg": False})
    return base


def _plain(value: Any) -> Any:
    """A column's value as JSON: addresses and networks as text, times in OpenStack's form."""
    if isinstance(value, datetime.datetime):
        return iso(value)
    if value is None or isinstance(value, bool | int | float | str | list | dict):
        return value
    return str(value)


def from_row(kind: Kind, record: Mapping[str, Any] | asyncpg.Record) -> Body:
    """The body Neutron shows for a row (without what other rows contribute: a network's subnets...)."""
    row = dict(record.items())
    body = defaults(kind)
    body.update(row["data"] or {})
    for attr in kind.info.columns:
        column = _COLUMN_OF.get(attr, attr)
        if column in row:
            body[attr] = _plain(row[column])
    body["id"] = row["id"]
    body["project_id"] = body["tenant_id"] = row["project_id"]
    if kind in _TAGGED:
        body["tags"] = list(row["tags"])
    body["created_at"] = iso(row["created_at"])
    body["updated_at"] = iso(row["updated_at"])
    if kind is Kind.SUBNET and body.get("gateway_ip") is not None:
        body["gateway_ip"] = str(body["gateway_ip"]).split("/")[0]
    if kind is Kind.PORT and body["status"] == "ACTIVE" and body["device_owner"].startswith("compute:") \
            and not body.get("binding:host_id"):
        # a port Nova bound writes only the columns: show it bound as Neutron would
        body.update({"binding:host_id": "simcloud", "binding:vif_type": "ovs",
                     "binding:vif_details": {"port_filter": True, "connectivity": "l2"}})
    if kind is Kind.FLOATINGIP:
        for key in ("floating_ip_address", "fixed_ip_address"):
            if body.get(key) is not None:
                body[key] = str(body[key]).split("/")[0]
    return body


_NOT_DATA = frozenset({"id", "project_id", "tenant_id", "tags", "created_at", "updated_at", "subnets",
                       "security_group_rules"})


# A port's binding details only an admin sees (Neutron's policy); the owner sees binding:vnic_type.
ADMIN_ONLY = {Kind.PORT: ("binding:host_id", "binding:profile", "binding:vif_type", "binding:vif_details")}


def for_caller(kind: Kind, body: Body, *, admin: bool) -> Body:
    """The body as the caller may see it."""
    hidden = () if admin else ADMIN_ONLY.get(kind, ())
    return {k: v for k, v in body.items() if k not in hidden} if hidden else body


def data_of(kind: Kind, body: Mapping[str, Any]) -> Body:
    """What of a body goes in the row's ``data``: all but the columns and what is derived on read."""
    skip = _NOT_DATA | set(kind.info.columns)
    return {k: v for k, v in body.items() if k not in skip}


def columns_of(kind: Kind, body: Mapping[str, Any]) -> Body:
    """The row's columns (by column name) from a body."""
    return {_COLUMN_OF.get(attr, attr): body[attr] for attr in kind.info.columns if attr in body}


def check_attrs(kind: Kind, request: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """400 with Neutron's words for attributes this call does not take."""
    unknown = sorted(set(request) - set(allowed))
    if unknown:
        raise bad_request("Unrecognized attribute(s) '" + ", ".join(unknown) + "'")


def merged(kind: Kind, current: Body, request: Mapping[str, Any]) -> Body:
    """``current`` with an update request applied; 400 for attributes Neutron does not let change."""
    check_attrs(kind, request, kind.info.updatable)
    body = dict(current)
    body.update(request)
    body["revision_number"] = int(current.get("revision_number", 0)) + 1
    return body


def fresh(kind: Kind, request: Mapping[str, Any], *, ident: str, project_id: str) -> Body:
    """A new object's body from a create request: defaults, then what was asked."""
    if "tags" in request:
        if kind is not Kind.PORT:
            raise bad_request("Attribute 'tags' not allowed in POST")
        request = {k: v for k, v in request.items() if k != "tags"}
    check_attrs(kind, request, kind.info.creatable)
    body = defaults(kind)
    body.update({k: v for k, v in request.items() if k not in ("tenant_id", "project_id")})
    body["id"] = ident
    body["project_id"] = body["tenant_id"] = project_id
    body["name"] = body.get("name") or ""
    if body.get("description") is None:
        body["description"] = ""
    return body
