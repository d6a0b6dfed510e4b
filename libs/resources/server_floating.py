"""The ``floating_ip`` of a server's ``networks`` entries: associated with the entry's port.

As in Heat, an entry that names a ``port``, or gets a port the server makes for it
(:mod:`libs.resources.server_ports`), may name a floating IP (its id); the floating IP
is pointed at that port (and at the entry's ``fixed_ip``, if given) before the server is
made. An entry with only a ``network`` has no port before Nova boots the server, so
validation refuses a floating IP there. Pointing a floating IP at a port is the same
request however often it is sent, so a lost answer is answered by sending it again.
An update that changes only entries' floating IPs points them anew, leaving the interfaces
as they are (:func:`update_calls`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from libs.cloud.calls import CloudCall
from libs.resources import server_schema as s
from libs.resources.cloud_steps import network

ASSOCIATED: Final = "floating_associated"  # data: "1" once every entry's floating IP points at its port


def fip_key(index: int) -> str:
    return f"fip{index}"


def association_calls(props: Mapping[str, Any], ports: Mapping[int, str]) -> list[CloudCall]:
    """One ``update_ip`` per entry with a floating IP and a port (given, or made: ``ports``)."""
    calls = []
    for index, entry in enumerate(props.get(s.NETWORKS) or ()):
        floating = entry.get(s.NET_FLOATING_IP)
        port = entry.get(s.NET_PORT) or ports.get(index)
        if not floating or not port:
            continue
        where: dict[str, Any] = {"port_id": port}
        if entry.get(s.NET_FIXED_IP):
            where["fixed_ip_address"] = entry[s.NET_FIXED_IP]
        calls.append(network(fip_key(index), "update_ip", floating, **where))
    return calls


def _held(entries: Sequence[Mapping[str, Any]], port_of: Callable[[int, Mapping[str, Any]], str | None]
          ) -> dict[str, dict[str, Any]]:
    """Floating IP -> where it points (port, fixed IP), for entries that have both."""
    held = {}
    for index, entry in enumerate(entries):
        floating, port = entry.get(s.NET_FLOATING_IP), port_of(index, entry)
        if floating and port:
            where: dict[str, Any] = {"port_id": port}
            if entry.get(s.NET_FIXED_IP):
                where["fixed_ip_address"] = entry[s.NET_FIXED_IP]
            held[floating] = where
    return held


def update_calls(old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], kept: Mapping[int, int],
                 ports: Mapping[int, str]) -> tuple[list[CloudCall], list[CloudCall]]:
    """What an in-place update of ``networks`` does to floating IPs: (let go, then point).

    ``kept`` maps a new entry to the old entry it keeps (its port, if the server made one:
    ``ports``, by old index). A floating IP no entry names any more, or that moves, is let
    go first: Neutron refuses a second floating IP on a fixed IP that still has one.
    """
    had = _held(old, lambda i, e: e.get(s.NET_PORT) or ports.get(i))
    wanted = _held(new, lambda i, e: e.get(s.NET_PORT) or (ports.get(kept[i]) if i in kept else None))
    off = [network(f"fip_off{n}", "update_ip", floating, port_id=None)
           for n, floating in enumerate(sorted(f for f in had if f not in wanted))]
    on = [network(f"fip_on{n}", "update_ip", floating, **where)
          for n, (floating, where) in enumerate(sorted(wanted.items())) if had.get(floating) != where]
    return off, on
