"""A server's ``networks`` changed in place: which interfaces to detach and which to attach.

Heat's rule: entries are compared without their ``tag``, ``port_extra_properties`` and
``floating_ip`` (:mod:`libs.resources.server_floating` points those anew);
an old entry with no equal among the new ones loses its interface (its own port, or the
port Nova made on its network), and a new entry with no equal among the old ones gets
one. ``allocate_network`` (auto/none) cannot be changed in place by Ember: such a
change replaces the server.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from libs.cloud.calls import CloudCall
from libs.resources import server_create as sc
from libs.resources import server_schema as s
from libs.resources.cloud_steps import compute

Entry = Mapping[str, Any]


def managed(entry: Entry) -> dict[str, Any]:
    return {k: v for k, v in entry.items()
            if k not in (s.NET_TAG, s.NET_PORT_EXTRA, s.NET_FLOATING_IP) and v is not None}


def differ(old: Sequence[Entry] | None, new: Sequence[Entry] | None) -> bool:
    return [managed(e) for e in old or ()] != [managed(e) for e in new or ()]


def in_place(old: Sequence[Entry] | None, new: Sequence[Entry] | None) -> bool:
    """Whether the change can be made by attaching and detaching interfaces.

    Not when ``allocate_network`` is involved, nor for entries whose ports the server
    makes itself (a subnet, extra port properties): those replace the server.
    """
    entries = [*(old or ()), *(new or ())]
    return not any(e.get(s.NET_ALLOCATE) or (not e.get(s.NET_PORT) and (e.get(s.NET_SUBNET) or
                                                                     e.get(s.NET_PORT_EXTRA)))
                   for e in entries)


def plan(old: Sequence[Entry], new: Sequence[Entry]) -> tuple[list[int], list[int], dict[int, int]]:
    """(old indexes removed, new indexes added, new index -> the old index it keeps)."""
    unmatched = list(range(len(old)))
    kept: dict[int, int] = {}
    added: list[int] = []
    for index, entry in enumerate(new):
        twin = next((j for j in unmatched if managed(old[j]) == managed(entry)), None)
        if twin is None:
            added.append(index)
        else:
            unmatched.remove(twin)
            kept[index] = twin
    return unmatched, added, kept


def lookups(new: Sequence[Entry], added: Sequence[int]) -> list[CloudCall]:
    return [c for index in added for c in sc.network_lookups(index, new[index])]


def _net_id(ids: Mapping[str, Any], index: int) -> Any:
    return ids.get(sc.net_key(index)) or ids.get(sc.subnet_key(index))


def new_ids(ids: Mapping[str, Any], kept: Mapping[int, int], resolved: Mapping[str, Any]) -> dict[str, Any]:
    """What the lookups found, re-indexed by the new entries (flavor and image kept)."""
    out = {k: v for k, v in ids.items() if not k.startswith(("net", "subnet"))}
    for new_index, old_index in kept.items():
        if ids.get(sc.net_key(old_index)):
            out[sc.net_key(new_index)] = ids[sc.net_key(old_index)]
        if ids.get(sc.subnet_key(old_index)):
            out[sc.subnet_key(new_index)] = ids[sc.subnet_key(old_index)]
    out.update(resolved)
    return out


def changes(server_id: str, old: Sequence[Entry], new: Sequence[Entry], *, ids: Mapping[str, Any],
            resolved_ids: Mapping[str, Any], ports: Sequence[Mapping[str, Any]]) -> list[CloudCall]:
    """The detach and attach calls (``ids`` as before the update, ``resolved_ids`` after)."""
    removed, added, _ = plan(old, new)
    calls: list[CloudCall] = []
    taken: set[str] = set()
    for number, index in enumerate(removed):
        port_id = _port_of(old[index], _net_id(ids, index), ports, taken)
        if port_id:
            taken.add(port_id)
            calls.append(compute(f"detach_{number}", "delete_server_interface", port_id, server=server_id))
    for number, index in enumerate(added):
        entry = new[index]
        kwargs: dict[str, Any]
        if entry.get(s.NET_PORT):
            kwargs = {"port_id": entry[s.NET_PORT]}
        else:
            kwargs = {"net_id": _net_id(resolved_ids, index)}
            if entry.get(s.NET_FIXED_IP):
                kwargs["fixed_ips"] = [{"ip_address": entry[s.NET_FIXED_IP]}]
        calls.append(compute(f"attach_{number}", "create_server_interface", server_id, **kwargs))
    return calls


def _port_of(entry: Entry, net_id: Any, ports: Sequence[Mapping[str, Any]], taken: set[str]) -> str | None:
    if entry.get(s.NET_PORT):
        return str(entry[s.NET_PORT])
    candidates = [p for p in ports if p.get("network_id") == net_id and p.get("id") not in taken]
    fixed = entry.get(s.NET_FIXED_IP)
    for port in candidates:
        if fixed and any(ip.get("ip_address") == fixed for ip in port.get("fixed_ips") or ()):
            return str(port["id"])
    return str(candidates[0]["id"]) if candidates else None
