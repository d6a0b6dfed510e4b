"""Subnet address arithmetic, pure: default gateway and pools, validation, the next free address.

Addresses are compared as integers within one subnet's IP version.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Sequence
from typing import Any

from libs.simcloud.errors import ApiError, bad_request, conflict

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def parse_cidr(cidr: str, ip_version: int) -> Network:
    """The subnet of ``cidr`` (host bits dropped, as Neutron does); 400 if not of ``ip_version``."""
    try:
        net = ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        raise bad_request(f"Invalid input for cidr. Reason: '{cidr}' is not a valid IP subnet.") from None
    if net.version != ip_version:
        raise bad_request("Invalid input for operation: Cidr and IP version are not compatible.")
    return net


def parse_ip(text: str) -> int:
    try:
        return int(ipaddress.ip_address(text))
    except ValueError:
        raise bad_request(f"Invalid input for operation: '{text}' is not a valid IP address.") from None


def _text(net: Network, value: int) -> str:
    return str(ipaddress.IPv4Address(value) if net.version == 4 else ipaddress.IPv6Address(value))


def _first_last(net: Network) -> tuple[int, int]:
    low, high = int(net.network_address), int(net.broadcast_address)
    if net.version == 4 and net.prefixlen < 31:
        return low + 1, high - 1
    if net.version == 6 and net.prefixlen < 127:
        return low + 1, high
    return low, high


def _inside(net: Network, value: int) -> bool:
    return int(net.network_address) <= value <= int(net.broadcast_address)


def default_gateway(net: Network) -> str:
    return _text(net, _first_last(net)[0])


def default_pools(net: Network, gateway: str | None) -> list[dict[str, str]]:
    """Every usable address but the gateway, as one or two ranges."""
    first, last = _first_last(net)
    gw = None if gateway is None else parse_ip(gateway)
    if gw is None or not first <= gw <= last:
        return [{"start": _text(net, first), "end": _text(net, last)}]
    pools = []
    if first < gw:
        pools.append({"start": _text(net, first), "end": _text(net, gw - 1)})
    if gw < last:
        pools.append({"start": _text(net, gw + 1), "end": _text(net, last)})
    return pools


def check_gateway(net: Network, gateway: str) -> str:
    gw = parse_ip(gateway)
    if not _inside(net, gw):
        raise bad_request(f"Gateway IP {gateway} conflicts with subnet {net}.", "InvalidInput")
    return _text(net, gw)


def check_pools(net: Network, pools: Sequence[dict[str, Any]], gateway: str | None) -> list[dict[str, str]]:
    """Requested pools, validated as Neutron does: inside the cidr, start <= end, no overlap, no gateway."""
    ranges: list[tuple[int, int]] = []
    for pool in pools:
        start, end = parse_ip(str(pool.get("start"))), parse_ip(str(pool.get("end")))
        shown = f"{pool.get('start')}-{pool.get('end')}"
        if not (_inside(net, start) and _inside(net, end)):
            raise bad_request(f"The allocation pool {shown} spans beyond the subnet cidr {net}.",
                              "OutOfBoundsAllocationPool")
        if start > end:
            raise bad_request(f"The allocation pool {shown} is not valid.", "InvalidAllocationPool")
        for other_start, other_end in ranges:
            if start <= other_end and other_start <= end:
                raise bad_request(f"Found overlapping allocation pools: {shown} and "
                                  f"{_text(net, other_start)}-{_text(net, other_end)} for subnet {net}.",
                                  "OverlappingAllocationPools")
        if gateway is not None and start <= parse_ip(gateway) <= end:
            raise ApiError(409, f"Gateway ip {gateway} conflicts with allocation pool {shown}.",
                           "GatewayConflictWithAllocationPools")
        ranges.append((start, end))
    return [{"start": _text(net, s), "end": _text(net, e)} for s, e in ranges]


def next_free(net: Network, pools: Sequence[dict[str, str]], used: Collection[str], network_id: str) -> str:
    """The lowest pool address not in ``used``; 409 IpAddressGenerationFailure when none is left."""
    taken = {parse_ip(u) for u in used}
    for pool in pools:
        address, end = parse_ip(pool["start"]), parse_ip(pool["end"])
        while address <= end:
            if address not in taken:
                return _text(net, address)
            address += 1
    raise conflict(f"No more IP addresses available on network {network_id}.", "IpAddressGenerationFailure")


def check_requested(net: Network, address: str, used: Collection[str], subnet_id: str) -> str:
    """A requested fixed IP: inside the subnet and free (409 IpAddressAlreadyAllocated as Neutron)."""
    ip = parse_ip(address)
    if not _inside(net, ip):
        raise bad_request(f"IP address {address} is not a valid IP for the specified subnet.",
                          "InvalidIpForSubnet")
    if ip in {parse_ip(u) for u in used}:
        raise conflict(f"IP address {_text(net, ip)} already allocated in subnet {subnet_id}",
                       "IpAddressAlreadyAllocated")
    return _text(net, ip)


def in_subnet(net: Network, address: str) -> bool:
    try:
        return _inside(net, int(ipaddress.ip_address(address))) and \
            ipaddress.ip_address(address).version == net.version
    except ValueError:
        return False


def mac_for(seq: int) -> str:
    """A MAC in OpenStack's default base fa:16:3e, distinct per number below 2**24."""
    return f"fa:16:3e:{(seq >> 16) & 0xFF:02x}:{(seq >> 8) & 0xFF:02x}:{seq & 0xFF:02x}"
