"""The ports a server makes for itself: ``networks`` entries with a ``subnet`` or ``port_extra_properties``.

As in Heat, such an entry gets a Neutron port made before the server (named
``<resource>-port-<index>``, on the subnet's network, with the fixed IP if given and
the extra properties), and the server boots on it. Neutron takes no tags in a create,
so each carries ``ctx.cloud_tag`` as its description (Heat leaves it empty): after a
crash the ports already made are found by it and reused, and a delete finds them all
(the server's own delete does not remove ports it did not make).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from libs.cloud.calls import CloudCall
from libs.resources import server_create as sc
from libs.resources import server_schema as s
from libs.resources.cloud_steps import dumps, loads, network
from libs.resources.steps import StepContext

INTERNAL_PORTS: Final = "internal_ports"  # data: {"<index>": port id}
FOUND: Final = "internal_found"


def port_key(index: int) -> str:
    return f"iport{index}"


def needs_port(entry: Mapping[str, Any]) -> bool:
    return not entry.get(s.NET_PORT) and bool(entry.get(s.NET_SUBNET) or entry.get(s.NET_PORT_EXTRA))


def wanted(props: Mapping[str, Any]) -> list[int]:
    return [i for i, entry in enumerate(props.get(s.NETWORKS) or ()) if needs_port(entry)]


def port_name(resource_name: str, index: int) -> str:
    return f"{resource_name}-port-{index}"


def made(ctx: StepContext) -> dict[int, str]:
    return {int(k): str(v) for k, v in loads(ctx.data, INTERNAL_PORTS, {}).items()}


def kept(ports: Mapping[int, str]) -> str:
    return dumps({str(k): v for k, v in ports.items()})


def create_calls(ctx: StepContext, ids: Mapping[str, Any], existing: Mapping[int, str]) -> list[CloudCall]:
    calls = []
    for index in wanted(ctx.properties):
        if index in existing:
            continue
        entry = ctx.properties[s.NETWORKS][index]
        fixed: dict[str, Any] = {}
        if entry.get(s.NET_SUBNET):
            fixed["subnet_id"] = ids.get(f"subnet_id{index}") or entry[s.NET_SUBNET]
        if entry.get(s.NET_FIXED_IP):
            fixed["ip_address"] = entry[s.NET_FIXED_IP]
        kwargs: dict[str, Any] = {**(entry.get(s.NET_PORT_EXTRA) or {}),
                                  "network_id": ids.get(sc.net_key(index)) or ids.get(sc.subnet_key(index)),
                                  "name": port_name(ctx.resource_name, index), "description": ctx.cloud_tag}
        if fixed:
            kwargs["fixed_ips"] = [fixed]
        groups = [ids[sc.sg_key(i)] for i in range(len(ctx.properties.get(s.SECURITY_GROUPS) or ()))
                  if ids.get(sc.sg_key(i))]
        if groups:
            kwargs["security_group_ids"] = groups
        calls.append(network(port_key(index), "create_port", **kwargs))
    return calls


def find_call(ctx: StepContext) -> CloudCall:
    return network(FOUND, "ports", description=ctx.cloud_tag)


def _ours(port: Any, tag: str) -> bool:
    return isinstance(port, Mapping) and port.get("description") == tag


def adopted(ctx: StepContext, listing: Any) -> dict[int, str]:
    """The ports of this resource a listing shows, by entry index (their names say which)."""
    names = {port_name(ctx.resource_name, i): i for i in wanted(ctx.properties)}
    return {names[p["name"]]: str(p["id"]) for p in listing or ()
            if _ours(p, ctx.cloud_tag) and p.get("name") in names}


def delete_calls(listing: Sequence[Any] | None, tag: str) -> list[CloudCall]:
    return [network(f"iport_delete_{i}", "delete_port", str(p["id"]), ignore_missing=True)
            for i, p in enumerate(listing or ()) if _ours(p, tag)]
