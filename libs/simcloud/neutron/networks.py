"""Networks and subnets: creation with Neutron's defaults and checks, in-use refusals on delete."""

from __future__ import annotations

import ipaddress
from typing import Any

from libs.simcloud.errors import ApiError, bad_request, conflict
from libs.simcloud.neutron import ipam, store
from libs.simcloud.neutron.bodies import Body, Kind, fresh, merged
from libs.simcloud.neutron.context import Op


def _check_mtu(body: Body) -> None:
    mtu = body.get("mtu")
    if not isinstance(mtu, int) or isinstance(mtu, bool) or mtu < 68:
        raise bad_request(f"Invalid input for mtu. Reason: '{mtu}' is too small - must be at least '68'.")


async def create_network(op: Op, request: dict[str, Any]) -> Body:
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.NETWORK, project_id)
    body = fresh(Kind.NETWORK, request, ident=op.state.new_id(), project_id=project_id)
    _check_mtu(body)
    await store.insert(op.conn, Kind.NETWORK, body)
    return await store.one(op.conn, Kind.NETWORK, body["id"], None)


async def update_network(op: Op, current: Body, request: dict[str, Any]) -> Body:
    body = merged(Kind.NETWORK, current, request)
    _check_mtu(body)
    await store.update(op.conn, Kind.NETWORK, body)
    return await store.one(op.conn, Kind.NETWORK, body["id"], None)


async def delete_network(op: Op, current: Body) -> None:
    in_use = await op.conn.fetchval(
        "SELECT count(*) FROM simcloud.ports WHERE network_id = $1 AND device_owner <> 'network:dhcp'",
        current["id"])
    if in_use or await store.allocations_on(op.conn, current["subnets"]):
        raise conflict(f"Unable to complete operation on network {current['id']}. There are one or more "
                       "ports still in use on the network.", "NetworkInUse")
    await op.conn.execute("DELETE FROM simcloud.subnets WHERE network_id = $1", current["id"])
    await store.delete(op.conn, Kind.NETWORK, current["id"])


def _subnet_fields(body: Body, net: ipam.Network, gateway_given: bool) -> None:
    """Gateway, pools and the lists in place, checked (``body`` changes)."""
    if not gateway_given:
        body["gateway_ip"] = ipam.default_gateway(net)
    elif body.get("gateway_ip") is not None:
        body["gateway_ip"] = ipam.check_gateway(net, str(body["gateway_ip"]))
    if body.get("allocation_pools"):
        body["allocation_pools"] = ipam.check_pools(net, body["allocation_pools"], body.get("gateway_ip"))
    else:
        body["allocation_pools"] = ipam.default_pools(net, body.get("gateway_ip"))
    for key in ("dns_nameservers", "host_routes", "service_types"):
        if body.get(key) is None:
            body[key] = []


async def create_subnet(op: Op, request: dict[str, Any]) -> Body:
    network_id = request.get("network_id")
    if not network_id:
        raise bad_request("Failed to parse request. Required attribute 'network_id' not specified")
    network = await store.one(op.conn, Kind.NETWORK, str(network_id), op.scope, lock=True)
    if not request.get("cidr"):
        raise bad_request("Bad subnet request: a subnetpool must be specified in the absence of a cidr.")
    version = int(request.get("ip_version") or 4)
    if version not in (4, 6):
        raise bad_request(f"Invalid input for ip_version. Reason: {version} is not in valid_values.")
    net = ipam.parse_cidr(str(request["cidr"]), version)
    others = await op.conn.fetch("SELECT cidr FROM simcloud.subnets WHERE network_id = $1", network["id"])
    for other in others:
        if net.overlaps(ipaddress.ip_network(str(other["cidr"]))):
            raise bad_request(f"Invalid input for operation: Requested subnet with cidr: {net} for network: "
                              f"{network['id']} overlaps with another subnet.")
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.SUBNET, project_id)
    body = fresh(Kind.SUBNET, request, ident=op.state.new_id(), project_id=project_id)
    body.update(cidr=str(net), ip_version=version, network_id=network["id"])
    body.pop("prefixlen", None)
    body.pop("use_default_subnetpool", None)
    _subnet_fields(body, net, "gateway_ip" in request)
    await store.insert(op.conn, Kind.SUBNET, body)
    return await store.one(op.conn, Kind.SUBNET, body["id"], None)


async def update_subnet(op: Op, current: Body, request: dict[str, Any]) -> Body:
    body = merged(Kind.SUBNET, current, request)
    net = ipam.parse_cidr(current["cidr"], current["ip_version"])
    if "gateway_ip" in request and "allocation_pools" not in request and body.get("gateway_ip"):
        gateway = ipam.check_gateway(net, str(body["gateway_ip"]))
        if any(ipam.parse_ip(p["start"]) <= ipam.parse_ip(gateway) <= ipam.parse_ip(p["end"])
               for p in body["allocation_pools"]):
            raise ApiError(409, f"Gateway ip {gateway} conflicts with allocation pool "
                           f"{body['allocation_pools'][0]['start']}-{body['allocation_pools'][-1]['end']}.",
                           "GatewayConflictWithAllocationPools")
    _subnet_fields(body, net, True)
    await store.update(op.conn, Kind.SUBNET, body)
    return await store.one(op.conn, Kind.SUBNET, body["id"], None)


async def delete_subnet(op: Op, current: Body) -> None:
    if await store.allocations_on(op.conn, [current["id"]]):
        raise conflict(f"Unable to complete operation on subnet {current['id']}: One or more ports have "
                       "an IP allocation from this subnet.", "SubnetInUse")
    await store.delete(op.conn, Kind.SUBNET, current["id"])
