"""Ports: addresses by subnet or IP, security groups by default, binding, in-use refusals."""

from __future__ import annotations

from typing import Any

from libs.simcloud import netcore
from libs.simcloud.errors import ApiError, bad_request, conflict
from libs.simcloud.neutron import ipam, store
from libs.simcloud.neutron.bodies import Body, Kind, data_of, fresh, merged
from libs.simcloud.neutron.context import Op
from libs.simcloud.neutron.security import ensure_default

ROUTER_INTERFACE = "network:router_interface"
SIM_HOST = "simcloud"


def bound(body: Body) -> Body:
    """Binding and status as they follow from the device: a port given to a server is bound and ACTIVE."""
    owner = str(body.get("device_owner") or "")
    # a router's ports stay DOWN as on Neutron with no agents; only Nova binds ports
    if body.get("device_id") and owner.startswith("compute:"):
        body["binding:host_id"] = body.get("binding:host_id") or SIM_HOST
        body["binding:vif_type"] = "ovs"
        body["binding:vif_details"] = {"port_filter": True, "connectivity": "l2", "bridge_name": "br-int"}
        body["status"] = "ACTIVE"
    else:
        body["binding:vif_type"] = "unbound"
        body["binding:vif_details"] = {}
        body["status"] = "DOWN"
    return body


def _fixed_ips(request: Any) -> list[dict[str, str]]:
    if request is None:
        return []
    if not isinstance(request, list):
        raise bad_request("Invalid input for fixed_ips. Reason: Invalid data format for fixed IP: "
                          f"'{request}'.")
    return [{k: str(v) for k, v in ip.items() if k in ("subnet_id", "ip_address") and v} for ip in request]


async def _groups(op: Op, body: Body, project_id: str, requested: Any) -> list[str]:
    if requested is None:
        if body.get("port_security_enabled", True) is False or str(body.get("device_owner", "")).startswith(
                "network:"):
            return []
        return [await ensure_default(op, project_id)]
    for group_id in requested:
        await store.one(op.conn, Kind.SECURITY_GROUP, str(group_id), op.scope)
    if requested and body.get("port_security_enabled") is False:
        raise conflict(f"Port {body['id']} has no IP address so security group cannot be applied.",
                       "PortSecurityAndIPRequiredForSecurityGroups")
    return [str(g) for g in requested]


async def create_port(op: Op, request: dict[str, Any], *, fixed: list[dict[str, str]] | None = None) -> Body:
    network_id = request.get("network_id")
    if not network_id:
        raise bad_request("Failed to parse request. Required attribute 'network_id' not specified")
    network = await store.one(op.conn, Kind.NETWORK, str(network_id), op.scope)
    project_id = op.owner(request.get("project_id") or request.get("tenant_id"))
    await op.check_quota(Kind.PORT, project_id)
    body = fresh(Kind.PORT, request, ident=op.state.new_id(), project_id=project_id)
    if "port_security_enabled" not in request:
        body["port_security_enabled"] = network["port_security_enabled"]
    body["security_groups"] = await _groups(op, body, project_id, request.get("security_groups"))
    for pair in body.get("allowed_address_pairs") or []:
        if not isinstance(pair, dict) or "ip_address" not in pair:
            raise bad_request("Invalid input for allowed_address_pairs. Reason: Missing ip_address.")
    body["allowed_address_pairs"] = [{"ip_address": p["ip_address"],
                                      "mac_address": p.get("mac_address") or "<port mac>"}
                                     for p in body.get("allowed_address_pairs") or []]
    bound(body)
    row = await netcore.create_port(
        op.conn, op.state.rng, port_id=body["id"], project_id=project_id, network_id=network["id"],
        fixed_ips=fixed if fixed is not None else _fixed_ips(request.get("fixed_ips")), name=body["name"],
        device_id=str(body["device_id"] or ""), device_owner=str(body["device_owner"] or ""),
        data=data_of(Kind.PORT, body))
    mac = request.get("mac_address") or row["mac_address"]
    for pair in body["allowed_address_pairs"]:
        if pair["mac_address"] == "<port mac>":
            pair["mac_address"] = mac
    await op.conn.execute("UPDATE simcloud.ports SET mac_address = $2, status = $3, tags = $4, data = $5"
                          " WHERE id = $1", body["id"], mac, body["status"], list(body.get("tags") or []),
                          data_of(Kind.PORT, body))
    return await store.one(op.conn, Kind.PORT, body["id"], None)


async def _reallocate(op: Op, current: Body, wanted: list[dict[str, str]]) -> list[dict[str, str]]:
    """New fixed IPs for a port: those kept keep their address, the others are allocated afresh."""
    kept = [ip for ip in current["fixed_ips"]
            if any(w.get("ip_address") == ip["ip_address"] or (w.get("subnet_id") == ip["subnet_id"]
                                                               and not w.get("ip_address")) for w in wanted)]
    gone = [ip for ip in current["fixed_ips"] if ip not in kept]
    for ip in gone:
        await op.conn.execute("DELETE FROM simcloud.ip_allocations WHERE port_id = $1 AND subnet_id = $2"
                              " AND ip_address = $3::inet", current["id"], ip["subnet_id"], ip["ip_address"])
    subnets = {s["id"]: s for s in await netcore.subnets_of(op.conn, current["network_id"])}
    result = list(kept)
    for want in wanted:
        if any(want.get("ip_address") == ip["ip_address"] or (want.get("subnet_id") == ip["subnet_id"]
                                                              and not want.get("ip_address")) for ip in kept):
            continue
        subnet = subnets.get(want.get("subnet_id", "")) or next(
            (s for s in subnets.values() if ipam.in_subnet(ipam.parse_cidr(str(s["cidr"]), s["ip_version"]),
                                                           want.get("ip_address", ""))), None)
        if subnet is None:
            raise bad_request(f"Invalid input for operation: Failed to create port on network "
                              f"{current['network_id']}, because fixed_ips included invalid subnet "
                              f"{want.get('subnet_id')}.")
        address = await netcore.allocate_ip(op.conn, subnet, current["id"], want.get("ip_address"))
        result.append({"subnet_id": subnet["id"], "ip_address": address})
    return result


async def update_port(op: Op, current: Body, request: dict[str, Any]) -> Body:
    body = merged(Kind.PORT, current, request)
    if "fixed_ips" in request:
        body["fixed_ips"] = await _reallocate(op, current, _fixed_ips(request["fixed_ips"]))
    if "security_groups" in request:
        body["security_groups"] = await _groups(op, body, current["project_id"],
                                                request["security_groups"] or [])
    if "device_id" in request and not request["device_id"] and "device_owner" not in request:
        body["device_owner"] = ""
    if request.get("port_security_enabled") is False and body["security_groups"] and \
            "security_groups" not in request:
        raise conflict(f"Port {current['id']} has security group associated. Cannot disable port security "
                       "or IP address until security group is removed", "PortSecurityPortHasSecurityGroup")
    bound(body)
    await store.update(op.conn, Kind.PORT, body)
    return await store.one(op.conn, Kind.PORT, body["id"], None)


async def delete_port(op: Op, current: Body) -> None:
    if current["device_owner"] == ROUTER_INTERFACE:
        raise ApiError(409, f"Port {current['id']} cannot be deleted directly via the port API: has device "
                       f"owner {ROUTER_INTERFACE}.", "ServicePortInUse")
    await netcore.delete_ports(op.conn, [current["id"]])
