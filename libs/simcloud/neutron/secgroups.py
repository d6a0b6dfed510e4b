"""Security group rules, pure: Neutron's defaults, a request's normalisation and checks, duplicates."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

from libs.simcloud.errors import bad_request, conflict

Body = dict[str, Any]

_PROTOCOL_NUMBERS = {"icmp": 1, "tcp": 6, "udp": 17, "icmpv6": 58, "ipv6-icmp": 58, "sctp": 132,
                     "gre": 47, "ah": 51, "esp": 50, "dccp": 33, "igmp": 2, "ipip": 4, "ospf": 89,
                     "pgm": 113, "rsvp": 46, "udplite": 136, "vrrp": 112, "ipv6-encap": 41,
                     "ipv6-frag": 44, "ipv6-nonxt": 59, "ipv6-opts": 60, "ipv6-route": 43}
_PORTED = {"tcp", "udp", "sctp", "dccp", "udplite", "6", "17", "132", "33", "136"}
_ICMP = {"icmp", "icmpv6", "ipv6-icmp", "1", "58"}
RULE_KEYS = ("direction", "ethertype", "protocol", "port_range_min", "port_range_max",
             "remote_ip_prefix", "remote_group_id", "remote_address_group_id")


def default_rules(group_id: str, *, is_default: bool) -> list[Body]:
    """The rules Neutron gives a new group: egress to anywhere over IPv4 and IPv6; the project's
    ``default`` group also admits ingress from its own members."""
    rules = []
    for ethertype in ("IPv4", "IPv6"):
        rules.append(_rule_fields("egress", ethertype, None))
        if is_default:
            rules.append(_rule_fields("ingress", ethertype, group_id))
    return rules


def _rule_fields(direction: str, ethertype: str, remote_group_id: str | None) -> Body:
    return {"direction": direction, "ethertype": ethertype, "protocol": None,
            "port_range_min": None, "port_range_max": None, "remote_ip_prefix": None,
            "remote_group_id": remote_group_id, "remote_address_group_id": None}


def _int_or_none(value: Any, name: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise bad_request(f"Invalid value for port {value}") from None


def normalise(request: Mapping[str, Any]) -> Body:
    """A create request's rule fields, checked as Neutron checks them (400 with its messages)."""
    direction = request.get("direction")
    if direction not in ("ingress", "egress"):
        raise bad_request(f"Invalid input for direction. Reason: {direction} is not in valid_values.")
    ethertype = request.get("ethertype") or "IPv4"
    if ethertype not in ("IPv4", "IPv6"):
        raise bad_request(f"Invalid input for ethertype. Reason: {ethertype} is not in valid_values.")
    protocol = request.get("protocol")
    protocol = None if protocol in (None, "", "any") else str(protocol).lower()
    if protocol is not None and protocol not in _PROTOCOL_NUMBERS and not (
            protocol.isdigit() and 0 <= int(protocol) <= 255):
        raise bad_request(f"Security group rule protocol {protocol} not supported. Only protocol "
                          "values [None, 'tcp', 'udp', 'icmp', ...] and integer representations "
                          "[0 to 255] are supported.", "SecurityGroupRuleInvalidProtocol")
    low = _int_or_none(request.get("port_range_min"), "port_range_min")
    high = _int_or_none(request.get("port_range_max"), "port_range_max")
    if (low is not None or high is not None) and protocol is None:
        raise bad_request("Must also specify protocol if port range is given.",
                          "SecurityGroupProtocolRequiredWithPorts")
    if protocol in _PORTED:
        if low is not None and high is not None and low > high:
            raise bad_request("For TCP/UDP protocols, port_range_min must be <= port_range_max",
                              "SecurityGroupInvalidPortRange")
        for port in (low, high):
            if port is not None and not 0 < port <= 65535:
                raise bad_request(f"Invalid value for port {port}", "SecurityGroupInvalidPortValue")
    elif protocol in _ICMP:
        for name, value in (("type", low), ("code", high)):
            if value is not None and not 0 <= value <= 255:
                raise bad_request(f"Invalid value for ICMP {name} (port_range_min) {value}",
                                  "SecurityGroupInvalidIcmpValue")
    prefix = request.get("remote_ip_prefix")
    remote_group = request.get("remote_group_id")
    if prefix and remote_group:
        raise bad_request("Only remote_ip_prefix or remote_group_id may be provided.",
                          "SecurityGroupRemoteGroupAndRemoteIpPrefix")
    if prefix:
        try:
            net = ipaddress.ip_network(str(prefix), strict=False)
        except ValueError:
            raise bad_request(f"Invalid input for remote_ip_prefix. Reason: '{prefix}' is not a "
                              "valid IP subnet.") from None
        if f"IPv{net.version}" != ethertype:
            raise bad_request(f"Conflicting value ethertype {ethertype} for CIDR {prefix}",
                              "SecurityGroupRuleParameterConflict")
        prefix = str(net)
    fields = _rule_fields(direction, ethertype, remote_group or None)
    fields.update(protocol=protocol, port_range_min=low, port_range_max=high,
                  remote_ip_prefix=prefix or None)
    return fields


def _comparable(rule: Mapping[str, Any]) -> tuple[Any, ...]:
    protocol = rule.get("protocol")
    if protocol is not None and str(protocol) in _PROTOCOL_NUMBERS:
        protocol = str(_PROTOCOL_NUMBERS[str(protocol)])
    prefix = rule.get("remote_ip_prefix")
    # Neutron treats 0.0.0.0/0 and ::/0 as no prefix when comparing
    if prefix in ("0.0.0.0/0", "::/0"):
        prefix = None
    return (rule.get("direction"), rule.get("ethertype"), None if protocol is None else str(protocol),
            rule.get("port_range_min"), rule.get("port_range_max"), prefix,
            rule.get("remote_group_id"), rule.get("remote_address_group_id"))


def check_duplicate(new: Mapping[str, Any], existing: Iterable[Mapping[str, Any]]) -> None:
    """409 SecurityGroupRuleExists when an equal rule is already in the group."""
    key = _comparable(new)
    for rule in existing:
        if _comparable(rule) == key:
            raise conflict(f"Security group rule already exists. Rule id is {rule['id']}.",
                           "SecurityGroupRuleExists")
