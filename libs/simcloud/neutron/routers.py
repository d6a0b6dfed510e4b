"""Routers (gateway, interfaces by subnet or port) and floating IPs (allocation, association)."""

from __future__ import annotations

import ipaddress
from typing import Any

from libs.simcloud import netcore
from libs.simcloud.errors import ApiError, bad_request, conflict
from libs.simcloud.neutron import ports, store
from libs.simcloud.neutron.bodies import Body, Kind, fresh, merged
from libs.simcloud.neutron.context import Op


async def _external(op: Op, network_id: str, refusal: str) -> Body:
    try:
        network = await store.one(op.conn, Kind.NETWORK, network_id, op.scope)
    except ApiError:
        network = None
    if network is None or not network["router:external"]:
        raise bad_request(refusal.format(network_id), "BadRequest")
    return network


async def _take_address(op: Op, network_id: str, holder_id: str, subnet_id: str | None = None,
                        address: str | None = None) -> dict[str, str]:
    """An address on an external network for a router's gateway or a floating IP (``holder_id``)."""
    subnets = [s for s in await netcore.subnets_of(op.conn, network_id)
               if subnet_id is None or s["id"] == subnet_id]
    if address is not None:
        subnets = [s for s in subnets
                   if ipaddress.ip_address(address) in ipaddress.ip_network(str(s["cidr"]))]
    subnets.sort(key=lambda s: s["ip_version"])
    if not subnets:
        raise ApiError(409, f"No more IP addresses available on network {network_id}.",
                       "IpAddressGenerationFailure")
    got = await netcore.allocate_ip(op.conn, subnets[0], holder_id, address)
    return {"subnet_id": subnets[0]["id"], "ip_address": got}


async def _gateway(op: Op, router_id: str, info: Any) -> dict[str, Any] | None:
    await store.free_addresses(op.conn, router_id)
    if not info:
        return None
    if not isinstance(info, dict) or not info.get("network_id"):
        raise bad_request("Invalid input for external_gateway_info. Reason: network_id is missing.")
    network_id = str(info["network_id"])
    await _external(op, network_id, "Bad router request: Network {} is not an external network.")
    wanted = info.get("external_fixed_ips") or [{}]
    fixed = [await _take_address(op, network_id, router_id, w.get("subnet_id"), w.get("ip_address"))
             for w in wanted]
    return {"network_id": network_id, "enable_snat": info.get("enable_snat", True),
            "external_fixed_ips": fixed}


async def create_router(op: Op, request: dict[str, Any]) -> Body:
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.ROUTER, project_id)
    body = fresh(Kind.ROUTER, request, ident=op.state.new_id(), project_id=project_id)
    body["external_gateway_info"] = await _gateway(op, body["id"], request.get("external_gateway_info"))
    await store.insert(op.conn, Kind.ROUTER, body)
    return await store.one(op.conn, Kind.ROUTER, body["id"], None)


async def update_router(op: Op, current: Body, request: dict[str, Any]) -> Body:
    body = merged(Kind.ROUTER, current, request)
    if "external_gateway_info" in request:
        old = current.get("external_gateway_info") or {}
        new = request["external_gateway_info"] or {}
        if old.get("network_id") != new.get("network_id") or new.get("external_fixed_ips"):
            if not new:
                await _check_no_floating(op, current["id"])
            body["external_gateway_info"] = await _gateway(op, current["id"], new)
        else:
            body["external_gateway_info"] = {**old, "enable_snat": new.get("enable_snat",
                                                                           old.get("enable_snat", True))}
    await store.update(op.conn, Kind.ROUTER, body)
    return await store.one(op.conn, Kind.ROUTER, body["id"], None)


async def _check_no_floating(op: Op, router_id: str) -> None:
    used = await op.conn.fetchval("SELECT count(*) FROM simcloud.floatingips WHERE data->>'router_id' = $1"
                                  " AND port_id IS NOT NULL", router_id)
    if used:
        raise conflict(f"Gateway cannot be updated for router {router_id}, since a gateway to external "
                       "network is required by one or more floating IPs.",
                       "RouterExternalGatewayInUseByFloatingIp")


async def delete_router(op: Op, current: Body) -> None:
    if await op.conn.fetchval("SELECT count(*) FROM simcloud.ports WHERE device_id = $1", current["id"]):
        raise conflict(f"Router {current['id']} still has ports", "RouterInUse")
    await _check_no_floating(op, current["id"])
    await store.free_addresses(op.conn, current["id"])
    await store.delete(op.conn, Kind.ROUTER, current["id"])


def _interface_info(router: Body, port: Body) -> Body:
    subnet_ids = [ip["subnet_id"] for ip in port["fixed_ips"]]
    return {"id": router["id"], "tenant_id": router["project_id"], "project_id": router["project_id"],
            "port_id": port["id"], "network_id": port["network_id"],
            "subnet_id": subnet_ids[0] if subnet_ids else None, "subnet_ids": subnet_ids, "tags": []}


async def _router_ports(op: Op, router_id: str) -> list[Body]:
    where = store.visible(Kind.PORT, None).add("device_id = {}", router_id)
    return await store.bodies(op.conn, Kind.PORT, where.add("device_owner = {}", ports.ROUTER_INTERFACE))


async def add_interface(op: Op, router: Body, request: dict[str, Any]) -> Body:
    subnet_id, port_id = request.get("subnet_id"), request.get("port_id")
    if subnet_id and port_id:
        raise bad_request("Bad router request: Cannot specify both subnet-id and port-id.")
    if not subnet_id and not port_id:
        raise bad_request("Bad router request: Either subnet_id or port_id must be specified.")
    existing = await _router_ports(op, router["id"])
    if port_id:
        port = await store.one(op.conn, Kind.PORT, str(port_id), op.scope, lock=True)
        if port["device_id"] or port["device_owner"]:
            raise conflict(f"Unable to complete operation on port {port['id']} for network "
                           f"{port['network_id']}. Port already has an attached device {port['device_id']}.",
                           "PortInUse")
        if not port["fixed_ips"]:
            raise bad_request("Bad router request: Router port must have at least one fixed IP.")
        on = {ip["subnet_id"] for ip in port["fixed_ips"]}
        for other in existing:
            if on & {ip["subnet_id"] for ip in other["fixed_ips"]}:
                raise bad_request(f"Bad router request: Router already has a port on subnet "
                                  f"{sorted(on)[0]}.")
        port = await ports.update_port(op, port, {"device_id": router["id"],
                                                  "device_owner": ports.ROUTER_INTERFACE})
        return _interface_info(router, port)
    subnet = await store.one(op.conn, Kind.SUBNET, str(subnet_id), op.scope)
    if not subnet["gateway_ip"]:
        raise bad_request("Bad router request: Subnet for router interface must have a gateway IP.")
    for other in existing:
        if any(ip["subnet_id"] == subnet["id"] for ip in other["fixed_ips"]):
            raise bad_request(f"Bad router request: Router already has a port on subnet {subnet['id']}.")
    port = await ports.create_port(
        op, {"network_id": subnet["network_id"], "device_id": router["id"],
             "device_owner": ports.ROUTER_INTERFACE, "project_id": router["project_id"]},
        fixed=[{"subnet_id": subnet["id"], "ip_address": subnet["gateway_ip"]}])
    return _interface_info(router, port)


async def remove_interface(op: Op, router: Body, request: dict[str, Any]) -> Body:
    subnet_id, port_id = request.get("subnet_id"), request.get("port_id")
    if not subnet_id and not port_id:
        raise bad_request("Bad router request: Either subnet_id or port_id must be specified.")
    existing = await _router_ports(op, router["id"])
    if port_id:
        port = next((p for p in existing if p["id"] == port_id), None)
        if port is None:
            raise ApiError(404, f"Router {router['id']} does not have an interface with id {port_id}",
                           "RouterInterfaceNotFound")
    else:
        port = next((p for p in existing if any(ip["subnet_id"] == subnet_id for ip in p["fixed_ips"])), None)
        if port is None:
            raise ApiError(404, f"Router {router['id']} has no interface on subnet {subnet_id}",
                           "RouterInterfaceNotFoundForSubnet")
    subnet_ids = [ip["subnet_id"] for ip in port["fixed_ips"]]
    if await op.conn.fetchval(
            "SELECT count(*) FROM simcloud.floatingips f JOIN simcloud.ports p ON p.id = f.port_id"
            " WHERE f.data->>'router_id' = $1 AND EXISTS (SELECT 1 FROM jsonb_array_elements(p.fixed_ips) ip"
            " WHERE ip->>'subnet_id' = ANY($2))", router["id"], subnet_ids):
        raise conflict(f"Router interface for subnet {subnet_ids[0]} on router {router['id']} cannot be "
                       "deleted, as it is required by one or more floating IPs.",
                       "RouterInterfaceInUseByFloatingIP")
    info = _interface_info(router, port)
    await netcore.delete_ports(op.conn, [port["id"]])
    return info


async def _association(op: Op, fip: Body, port_id: str | None, fixed_address: str | None) -> Body:
    """Where a floating IP now points: ``port_id``, ``fixed_ip_address``, ``router_id`` and status."""
    if not port_id:
        return {"port_id": None, "fixed_ip_address": None, "router_id": None, "status": "DOWN",
                "port_details": None}
    port = await store.one(op.conn, Kind.PORT, port_id, op.scope)
    fixed = [ip for ip in port["fixed_ips"] if ipaddress.ip_address(ip["ip_address"]).version == 4]
    if fixed_address:
        fixed = [ip for ip in port["fixed_ips"] if ip["ip_address"] == fixed_address]
        if not fixed:
            raise bad_request(f"Bad floatingip request: Port {port_id} does not have fixed ip "
                              f"{fixed_address}.")
    if not fixed:
        raise bad_request(f"Bad floatingip request: Port {port_id} does not have any IPv4 address.")
    chosen = fixed[0]
    taken = await op.conn.fetchval(
        "SELECT id FROM simcloud.floatingips WHERE port_id = $1 AND fixed_ip_address = $2::inet AND id <> $3",
        port_id, chosen["ip_address"], fip["id"])
    if taken:
        raise conflict(f"Cannot associate floating IP {fip['floating_ip_address']} ({fip['id']}) with port "
                       f"{port_id} using fixed IP {chosen['ip_address']}, as that fixed IP already has a "
                       f"floating IP on external network {fip['floating_network_id']}.",
                       "FloatingIPPortAlreadyAssociated")
    router_id = await op.conn.fetchval(
        "SELECT r.id FROM simcloud.routers r JOIN simcloud.ports p ON p.device_id = r.id"
        " WHERE p.device_owner = $1 AND r.data->'external_gateway_info'->>'network_id' = $2"
        " AND EXISTS (SELECT 1 FROM jsonb_array_elements(p.fixed_ips) ip WHERE ip->>'subnet_id' = $3)"
        " ORDER BY r.seq LIMIT 1", ports.ROUTER_INTERFACE, fip["floating_network_id"], chosen["subnet_id"])
    if router_id is None:
        raise ApiError(404, f"External network {fip['floating_network_id']} is not reachable from subnet "
                       f"{chosen['subnet_id']}.  Therefore, cannot associate Port {port_id} with a "
                       "Floating IP.", "ExternalGatewayForFloatingIPNotFound")
    return {"port_id": port_id, "fixed_ip_address": chosen["ip_address"], "router_id": router_id,
            "status": "ACTIVE",
            "port_details": {"name": port["name"], "network_id": port["network_id"],
                             "mac_address": port["mac_address"], "admin_state_up": port["admin_state_up"],
                             "status": port["status"], "device_id": port["device_id"],
                             "device_owner": port["device_owner"]}}


async def create_floatingip(op: Op, request: dict[str, Any]) -> Body:
    network_id = request.get("floating_network_id")
    if not network_id:
        raise bad_request("Failed to parse request. Required attribute 'floating_network_id' not specified")
    await _external(op, str(network_id),
                    "Bad floatingip request: Network {} is not a valid external network.")
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.FLOATINGIP, project_id)
    body = fresh(Kind.FLOATINGIP, request, ident=op.state.new_id(), project_id=project_id)
    body.pop("subnet_id", None)
    address = await _take_address(op, str(network_id), body["id"], request.get("subnet_id"),
                                  request.get("floating_ip_address"))
    body["floating_ip_address"] = address["ip_address"]
    body.update(await _association(op, body, request.get("port_id"), request.get("fixed_ip_address")))
    await store.insert(op.conn, Kind.FLOATINGIP, body)
    return await store.one(op.conn, Kind.FLOATINGIP, body["id"], None)


async def update_floatingip(op: Op, current: Body, request: dict[str, Any]) -> Body:
    body = merged(Kind.FLOATINGIP, current, request)
    if "port_id" in request or "fixed_ip_address" in request:
        body.update(await _association(op, current, body.get("port_id"), request.get("fixed_ip_address")))
    await store.update(op.conn, Kind.FLOATINGIP, body)
    return await store.one(op.conn, Kind.FLOATINGIP, body["id"], None)


async def delete_floatingip(op: Op, current: Body) -> None:
    await store.free_addresses(op.conn, current["id"])
    await store.delete(op.conn, Kind.FLOATINGIP, current["id"])
