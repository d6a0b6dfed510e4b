"""Ports and addresses, shared by Neutron (which owns the API) and Nova (which boots on them).

Tables (migration 0001, the frame's): ``simcloud.networks``, ``subnets``,
``ports``, ``ip_allocations`` and ``floatingips`` hold the columns both read;
Neutron keeps the rest of each object in ``data``. A port is bound to a server
when its ``device_id`` is the server's id (``device_owner`` ``compute:nova``);
``nova_owned`` marks a port Nova made for a server booted on a network, deleted
with the server. A fixed IP is a row of ``ip_allocations``, unique per subnet.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterator, Sequence
from typing import Any

import asyncpg

from libs.db import Conn
from libs.simcloud.errors import ApiError

COMPUTE_OWNER = "compute:nova"


def new_mac(rng: random.Random) -> str:
    return "fa:16:3e:" + ":".join(f"{rng.randrange(256):02x}" for _ in range(3))


def _pools(subnet: asyncpg.Record) -> list[tuple[ipaddress.IPv4Address | ipaddress.IPv6Address,
                                                 ipaddress.IPv4Address | ipaddress.IPv6Address]]:
    data = subnet["data"] or {}
    pools = data.get("allocation_pools") or []
    if pools:
        return [(ipaddress.ip_address(p["start"]), ipaddress.ip_address(p["end"])) for p in pools]
    net = ipaddress.ip_network(str(subnet["cidr"]))
    first = net.network_address + 1
    last = net.broadcast_address - (1 if net.version == 4 else 0)
    gateway = subnet["gateway_ip"]
    if gateway is not None and ipaddress.ip_address(str(gateway)) == first:
        first += 1
    return [(first, last)]


def _candidates(subnet: asyncpg.Record, after: Any | None) -> Iterator[str]:
    gateway = str(subnet["gateway_ip"]) if subnet["gateway_ip"] is not None else None
    for start, end in _pools(subnet):
        # As integers: an address family's pools never mix with the other's.
        address, last = int(start), int(end)
        if after is not None and int(ipaddress.ip_address(str(after))) >= address:
            address = int(ipaddress.ip_address(str(after))) + 1
        while address <= last:
            as_ip = ipaddress.IPv4Address(address) if start.version == 4 else ipaddress.IPv6Address(address)
            text = str(as_ip)
            if text != gateway:
                yield text
            address += 1


async def allocate_ip(conn: Conn, subnet: asyncpg.Record, port_id: str, wanted: str | None = None) -> str:
    """An address of ``subnet`` for ``port_id``: ``wanted`` if free (409 if not), else the next free one."""
    if wanted is not None:
        if ipaddress.ip_address(wanted) not in ipaddress.ip_network(str(subnet["cidr"])):
            raise ApiError(400, f"IP address {wanted} is not a valid IP for the specified subnet.",
                           "InvalidIpForSubnet")
        done = await conn.fetchval(
            "INSERT INTO simcloud.ip_allocations (subnet_id, ip_address, port_id) VALUES ($1, $2::inet, $3) "
            "ON CONFLICT DO NOTHING RETURNING ip_address", subnet["id"], wanted, port_id)
        if done is None:
            raise ApiError(409, f"IP address {wanted} already allocated in subnet {subnet['id']}",
                           "IpAddressAlreadyAllocated")
        return wanted
    # After the last one handed out first, then any gap from the start.
    last = await conn.fetchval("SELECT last_ip FROM simcloud.subnets WHERE id = $1", subnet["id"])
    for after in (last, None):
        for tried, address in enumerate(_candidates(subnet, after)):
            done = await conn.fetchval(
                "INSERT INTO simcloud.ip_allocations (subnet_id, ip_address, port_id) "
                "VALUES ($1, $2::inet, $3) ON CONFLICT DO NOTHING RETURNING ip_address",
                subnet["id"], address, port_id)
            if done is not None:
                await conn.execute("UPDATE simcloud.subnets SET last_ip = $2::inet WHERE id = $1",
                                   subnet["id"], address)
                return address
            if after is not None and tried > 16:
                break
    raise ApiError(409, f"No more IP addresses available on network {subnet['network_id']}.",
                   "IpAddressGenerationFailure")


async def network(conn: Conn, network_id: str) -> asyncpg.Record:
    found = await conn.fetchrow("SELECT * FROM simcloud.networks WHERE id = $1", network_id)
    if found is None:
        raise ApiError(404, f"Network {network_id} could not be found.", "NetworkNotFound")
    return found


async def subnets_of(conn: Conn, network_id: str) -> list[asyncpg.Record]:
    return list(await conn.fetch("SELECT * FROM simcloud.subnets WHERE network_id = $1 ORDER BY seq",
                                 network_id))


async def create_port(conn: Conn, rng: random.Random, *, port_id: str, project_id: str, network_id: str,
                      fixed_ips: Sequence[dict[str, str]] = (), name: str = "", device_id: str = "",
                      device_owner: str = "", nova_owned: bool = False,
                      data: dict[str, Any] | None = None) -> asyncpg.Record:
    """A port on ``network_id`` with its fixed IPs allocated (one on the first IPv4 subnet by default).

    ``fixed_ips`` as Neutron takes them: ``{"subnet_id": ..., "ip_address": ...}``, either key optional.
    """
    await network(conn, network_id)
    subnets = await subnets_of(conn, network_id)
    by_id = {s["id"]: s for s in subnets}
    chosen: list[dict[str, str]] = []
    wanted_list = list(fixed_ips) or ([{}] if subnets else [])
    for wanted in wanted_list:
        subnet = None
        if wanted.get("subnet_id"):
            subnet = by_id.get(wanted["subnet_id"])
            if subnet is None:
                raise ApiError(400, f"Subnet {wanted['subnet_id']} is not on network {network_id}.",
                               "InvalidInput")
        elif wanted.get("ip_address"):
            subnet = next((s for s in subnets if ipaddress.ip_address(wanted["ip_address"])
                           in ipaddress.ip_network(str(s["cidr"]))), None)
            if subnet is None:
                raise ApiError(400, f"IP address {wanted['ip_address']} is not a valid IP for any subnet "
                                    f"on network {network_id}.", "InvalidIpForNetwork")
        else:
            subnet = next((s for s in subnets if s["ip_version"] == 4), subnets[0])
        address = await allocate_ip(conn, subnet, port_id, wanted.get("ip_address"))
        chosen.append({"subnet_id": subnet["id"], "ip_address": address})
    row = await conn.fetchrow(
        "INSERT INTO simcloud.ports (id, project_id, network_id, name, mac_address, fixed_ips, device_id,"
        " device_owner, status, nova_owned, data) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
        " RETURNING *",
        port_id, project_id, network_id, name, new_mac(rng), chosen, device_id, device_owner,
        "ACTIVE" if device_id else "DOWN", nova_owned, data or {})
    assert row is not None
    return row


async def bind_port(conn: Conn, port_id: str, server_id: str) -> asyncpg.Record:
    """Give an existing, unbound port to a server (409 when another device holds it)."""
    row = await conn.fetchrow(
        "UPDATE simcloud.ports SET device_id = $2, device_owner = $3, status = 'ACTIVE', updated_at = now()"
        " WHERE id = $1 AND device_id IN ('', $2) RETURNING *", port_id, server_id, COMPUTE_OWNER)
    if row is not None:
        return row
    if await conn.fetchval("SELECT 1 FROM simcloud.ports WHERE id = $1", port_id) is None:
        raise ApiError(404, f"Port {port_id} could not be found.", "PortNotFound")
    raise ApiError(409, f"Port {port_id} is still in use.", "PortInUse")


async def release_ports(conn: Conn, server_id: str) -> None:
    """A server is gone: the ports Nova made go with it, the ones it was given are unbound."""
    owned = [r["id"] for r in await conn.fetch(
        "SELECT id FROM simcloud.ports WHERE device_id = $1 AND nova_owned", server_id)]
    if owned:
        await delete_ports(conn, owned)
    await conn.execute(
        "UPDATE simcloud.ports SET device_id = '', device_owner = '', status = 'DOWN', updated_at = now()"
        " WHERE device_id = $1", server_id)


async def delete_ports(conn: Conn, port_ids: Sequence[str]) -> None:
    """Delete ports, freeing their addresses and disassociating their floating IPs."""
    await conn.execute("UPDATE simcloud.floatingips SET port_id = NULL, fixed_ip_address = NULL,"
                       " status = 'DOWN', updated_at = now() WHERE port_id = ANY($1)", list(port_ids))
    await conn.execute("DELETE FROM simcloud.ip_allocations WHERE port_id = ANY($1)", list(port_ids))
    await conn.execute("DELETE FROM simcloud.ports WHERE id = ANY($1)", list(port_ids))


async def ports_for_servers(conn: Conn, server_ids: Sequence[str]) -> list[asyncpg.Record]:
    """The ports bound to these servers, with their network's name, in creation order."""
    return list(await conn.fetch(
        "SELECT p.*, n.name AS network_name FROM simcloud.ports p JOIN simcloud.networks n"
        " ON n.id = p.network_id WHERE p.device_id = ANY($1) ORDER BY p.seq", list(server_ids)))


async def addresses(conn: Conn, server_ids: Sequence[str]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Nova's ``addresses`` of each server: per network name, fixed then floating addresses."""
    ports = await ports_for_servers(conn, server_ids)
    floating = await conn.fetch(
        "SELECT port_id, fixed_ip_address, floating_ip_address FROM simcloud.floatingips"
        " WHERE port_id = ANY($1)", [p["id"] for p in ports]) if ports else []
    floats: dict[tuple[str, str], list[str]] = {}
    for f in floating:
        key = (f["port_id"], str(f["fixed_ip_address"]))
        floats.setdefault(key, []).append(str(f["floating_ip_address"]))
    result: dict[str, dict[str, list[dict[str, Any]]]] = {s: {} for s in server_ids}
    for port in ports:
        entries = result[port["device_id"]].setdefault(port["network_name"] or port["network_id"], [])
        for fixed in port["fixed_ips"]:
            version = ipaddress.ip_address(fixed["ip_address"]).version
            entries.append({"addr": fixed["ip_address"], "version": version,
                            "OS-EXT-IPS:type": "fixed", "OS-EXT-IPS-MAC:mac_addr": port["mac_address"]})
            for address in floats.get((port["id"], fixed["ip_address"]), []):
                entries.append({"addr": address, "version": 4, "OS-EXT-IPS:type": "floating",
                                "OS-EXT-IPS-MAC:mac_addr": port["mac_address"]})
    return result
