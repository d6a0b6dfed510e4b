"""Building what ``create_server`` is asked, and reading what Nova answers, for ``OS::Nova::Server``.

Pure functions over the server's typed properties and the answers of the
name lookups (``find_flavor``, ``find_image``, ``find_network``, ``find_subnet``),
and over the server and port dicts Nova and Neutron answer with.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from libs.cloud.calls import CloudCall
from libs.resources import server_schema as s
from libs.resources.cloud_steps import TAG_KEY, compute, image, network, not_found_failure
from libs.resources.steps import Failed
from libs.resources.user_data import build_user_data, encoded

SERVER_KEY: Final = "server"  # the answer of get_server
FLAVOR_KEY = "flavor"
IMAGE_KEY = "image"


def net_key(index: int) -> str:
    return f"net{index}"


def subnet_key(index: int) -> str:
    return f"subnet{index}"


def bdm_key(index: int) -> str:
    return f"bdm{index}"


def network_name(entry: Mapping[str, Any]) -> str | None:
    return entry.get(s.NET_NETWORK) or entry.get(s.NET_UUID) or None


def lookups(props: Mapping[str, Any]) -> list[CloudCall]:
    """The calls that turn the names the properties give into the ids Nova takes."""
    calls = [compute(FLAVOR_KEY, "find_flavor", props[s.FLAVOR], ignore_missing=False)]
    if props.get(s.IMAGE):
        calls.append(image(IMAGE_KEY, "find_image", props[s.IMAGE], ignore_missing=False))
    for index, entry in enumerate(props.get(s.NETWORKS) or ()):
        calls += network_lookups(index, entry)
    for index, bdm in enumerate(props.get(s.BLOCK_DEVICE_MAPPING_V2) or ()):
        name = bdm.get(s.BDM_IMAGE) or bdm.get(s.BDM_IMAGE_ID)
        if name:
            calls.append(image(bdm_key(index), "find_image", name, ignore_missing=False))
    if any(not e.get(s.NET_PORT) and (e.get(s.NET_SUBNET) or e.get(s.NET_PORT_EXTRA))
           for e in props.get(s.NETWORKS) or ()):
        # Ports the server makes for itself take its security groups, by id (Heat's rule).
        calls += [network(sg_key(i), "find_security_group", group, ignore_missing=False)
                  for i, group in enumerate(props.get(s.SECURITY_GROUPS) or ())]
    return calls


def sg_key(index: int) -> str:
    return f"sg{index}"


def get_server(server_id: str) -> CloudCall:
    return compute(SERVER_KEY, "get_server", server_id)


def network_lookups(index: int, entry: Mapping[str, Any]) -> list[CloudCall]:
    """The lookups of a ``networks`` entry's network and subnet (none for an entry with a port)."""
    if entry.get(s.NET_PORT):
        return []
    calls = []
    if network_name(entry):
        calls.append(network(net_key(index), "find_network", network_name(entry), ignore_missing=False))
    if entry.get(s.NET_SUBNET):
        calls.append(network(subnet_key(index), "find_subnet", entry[s.NET_SUBNET], ignore_missing=False))
    return calls


def lookup_failure(key: str, props: Mapping[str, Any]) -> Failed:
    """Heat's property error for a name the cloud does not know (its constraint's message)."""
    if key == FLAVOR_KEY:
        return not_found_failure("nova.flavor", props[s.FLAVOR], (s.FLAVOR,))
    if key == IMAGE_KEY:
        return not_found_failure("glance.image", props[s.IMAGE], (s.IMAGE,))
    if key.startswith("sg"):
        index = int(key[2:])
        return not_found_failure("neutron.security_group", props[s.SECURITY_GROUPS][index],
                                 (s.SECURITY_GROUPS, index))
    kind = key.rstrip("0123456789")
    index = int(key[len(kind):])
    if kind == "bdm":
        bdm = props[s.BLOCK_DEVICE_MAPPING_V2][index]
        field = s.BDM_IMAGE if bdm.get(s.BDM_IMAGE) else s.BDM_IMAGE_ID
        return not_found_failure("glance.image", bdm[field], (s.BLOCK_DEVICE_MAPPING_V2, index, field))
    entry = props[s.NETWORKS][index]
    if kind == "net":
        field = s.NET_NETWORK if entry.get(s.NET_NETWORK) else s.NET_UUID
        return not_found_failure("neutron.network", entry[field], (s.NETWORKS, index, field))
    return not_found_failure("neutron.subnet", entry[s.NET_SUBNET], (s.NETWORKS, index, s.NET_SUBNET))


def resolved_ids(answers: Mapping[str, Any]) -> dict[str, Any]:
    """What the lookups found, kept for the create and later updates: key -> id (a subnet: its network)."""
    ids: dict[str, Any] = {}
    for key, found in answers.items():
        if not isinstance(found, Mapping):
            continue
        if key.startswith("subnet"):
            ids[key] = found.get("network_id")
            ids[key.replace("subnet", "subnet_id", 1)] = found.get("id")
        else:
            ids[key] = found.get("id")
    return ids


def _nics(props: Mapping[str, Any], ids: Mapping[str, Any]) -> Any:
    entries = props.get(s.NETWORKS) or []
    if not entries:
        return "auto"
    if len(entries) == 1 and entries[0].get(s.NET_ALLOCATE):
        return entries[0][s.NET_ALLOCATE]
    nics: list[dict[str, Any]] = []
    for index, entry in enumerate(entries):
        nic: dict[str, Any] = {}
        if entry.get(s.NET_PORT):
            nic["port"] = entry[s.NET_PORT]
        elif ids.get(f"iport{index}"):
            nic["port"] = ids[f"iport{index}"]  # a port the server made for this entry
        else:
            # A subnet entry boots on the subnet's network (Nova chooses the address unless fixed_ip).
            nic["uuid"] = ids.get(net_key(index)) or ids.get(subnet_key(index))
            if entry.get(s.NET_FIXED_IP):
                nic["fixed_ip"] = entry[s.NET_FIXED_IP]
        if entry.get(s.NET_TAG):
            nic["tag"] = entry[s.NET_TAG]
        nics.append(nic)
    return nics


def _block_devices(props: Mapping[str, Any], ids: Mapping[str, Any]) -> list[dict[str, Any]]:
    devices: list[dict[str, Any]] = []
    for bdm in props.get(s.BLOCK_DEVICE_MAPPING) or ():
        device: dict[str, Any] = {"device_name": bdm[s.BDM_DEVICE_NAME], "boot_index": 0,
                                  "destination_type": "volume"}
        if bdm.get(s.BDM_VOLUME_ID):
            device.update(source_type="volume", uuid=bdm[s.BDM_VOLUME_ID])
        else:
            device.update(source_type="snapshot", uuid=bdm.get(s.BDM_SNAPSHOT_ID))
        if bdm.get(s.BDM_VOLUME_SIZE):
            device["volume_size"] = bdm[s.BDM_VOLUME_SIZE]
        device["delete_on_termination"] = bool(bdm.get(s.BDM_DELETE_ON_TERM))
        devices.append(device)
    for index, bdm in enumerate(props.get(s.BLOCK_DEVICE_MAPPING_V2) or ()):
        devices.append(_block_device_v2(bdm, ids.get(bdm_key(index))))
    return devices


def _block_device_v2(bdm: Mapping[str, Any], image_id: Any) -> dict[str, Any]:
    device: dict[str, Any] = {}
    if bdm.get(s.BDM_VOLUME_ID):
        device.update(source_type="volume", uuid=bdm[s.BDM_VOLUME_ID], destination_type="volume")
    elif image_id:
        device.update(source_type="image", uuid=image_id, destination_type="volume")
    elif bdm.get(s.BDM_SNAPSHOT_ID):
        device.update(source_type="snapshot", uuid=bdm[s.BDM_SNAPSHOT_ID], destination_type="volume")
    elif bdm.get(s.BDM_SWAP_SIZE):
        device.update(source_type="blank", destination_type="local", guest_format="swap",
                      volume_size=bdm[s.BDM_SWAP_SIZE], boot_index=-1)
    elif bdm.get(s.BDM_EPHEMERAL_SIZE):
        device.update(source_type="blank", destination_type="local", boot_index=-1,
                      volume_size=bdm[s.BDM_EPHEMERAL_SIZE])
        if bdm.get(s.BDM_EPHEMERAL_FORMAT):
            device["guest_format"] = bdm[s.BDM_EPHEMERAL_FORMAT]
    for prop, key in ((s.BDM_DEVICE_NAME, "device_name"), (s.BDM_DEVICE_TYPE, "device_type"),
                      (s.BDM_DISK_BUS, "disk_bus"), (s.BDM_BOOT_INDEX, "boot_index"),
                      (s.BDM_VOLUME_SIZE, "volume_size"), (s.BDM_VOLUME_TYPE, "volume_type")):
        if bdm.get(prop) is not None:
            device[key] = bdm[prop]
    if bdm.get(s.BDM_DELETE_ON_TERM) is not None:
        device["delete_on_termination"] = bdm[s.BDM_DELETE_ON_TERM]
    return device


def serialized_metadata(metadata: Mapping[str, Any] | None, tag: str) -> dict[str, str]:
    """Nova takes string values: others go as JSON (Heat's ``meta_serialize``); Ember's tag is added."""
    out = {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in (metadata or {}).items()}
    out[TAG_KEY] = tag
    return out


def create_kwargs(props: Mapping[str, Any], ids: Mapping[str, Any], *, name: str, tag: str,
                  metadata: Mapping[str, Any] | None = None, user_data: str | None = None) -> dict[str, Any]:
    """The arguments of ``compute.create_server``; ``metadata``: what a SOFTWARE_CONFIG server's
    user data carries for its agent; ``user_data``: its text, where not the property's
    (:func:`~libs.resources.user_data.content_of`)."""
    kwargs: dict[str, Any] = {
        "name": name, "flavor_id": ids.get(FLAVOR_KEY), "networks": _nics(props, ids),
        "metadata": serialized_metadata(props.get(s.METADATA), tag),
    }
    if props.get(s.IMAGE):
        kwargs["image_id"] = ids.get(IMAGE_KEY)
    text = user_data if user_data is not None else props.get(s.USER_DATA) or ""
    encoded_text = encoded(build_user_data(props[s.USER_DATA_FORMAT], text, metadata))
    if encoded_text:
        kwargs["user_data"] = encoded_text
    devices = _block_devices(props, ids)
    if devices:
        kwargs["block_device_mapping"] = devices
    if props.get(s.SECURITY_GROUPS):
        kwargs["security_groups"] = [{"name": group} for group in props[s.SECURITY_GROUPS]]
    if props.get(s.PERSONALITY):
        kwargs["personality"] = [{"path": path, "contents": contents}
                                 for path, contents in props[s.PERSONALITY].items()]
    optional = ((s.KEY_NAME, "key_name"), (s.AVAILABILITY_ZONE, "availability_zone"),
                (s.SCHEDULER_HINTS, "scheduler_hints"), (s.CONFIG_DRIVE, "config_drive"),
                (s.DISK_CONFIG, "disk_config"), (s.RESERVATION_ID, "reservation_id"),
                (s.ADMIN_PASS, "admin_password"), (s.TAGS, "tags"))
    for prop, key in optional:
        if props.get(prop):
            kwargs[key] = props[prop]
    return kwargs


# ---- what is kept of Nova's and Neutron's answers -----------------------------------------------

_DROPPED = frozenset({"admin_password", "user_data", "location"})


def kept_server(server: Mapping[str, Any]) -> dict[str, Any]:
    """The server as ``show`` gives it: Nova's answer without secrets."""
    return {k: v for k, v in server.items() if k not in _DROPPED}


def kept_ports(ports: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    return [{"id": p.get("id"), "network_id": p.get("network_id"), "mac_address": p.get("mac_address"),
             "fixed_ips": list(p.get("fixed_ips") or ())} for p in ports or ()]


def _version(addr: Any) -> int | None:
    try:
        return ipaddress.ip_address(str(addr)).version
    except ValueError:
        return None


def addresses(server: Mapping[str, Any], ports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Heat's ``addresses``: per network name (and id), each address with its port and network id."""
    by_ip = {ip.get("ip_address"): port for port in ports for ip in port.get("fixed_ips") or ()}
    out: dict[str, list[dict[str, Any]]] = {}
    net_ids: dict[str, str] = {}
    for label, entries in (server.get("addresses") or {}).items():
        listed = out.setdefault(label, [])
        for entry in entries or ():
            port = by_ip.get(entry.get("addr"))
            kind = entry.get("OS-EXT-IPS:type", "fixed")
            item = {"addr": entry.get("addr"), "version": entry.get("version") or _version(entry.get("addr")),
                    "OS-EXT-IPS-MAC:mac_addr": entry.get("OS-EXT-IPS-MAC:mac_addr"),
                    "OS-EXT-IPS:type": kind, "port": port.get("id") if port and kind == "fixed" else None}
            if port is not None:
                item["network"] = {"id": port.get("network_id"), "name": label}
                net_ids[label] = str(port.get("network_id"))
            listed.append(item)
    for label, net_id in net_ids.items():
        out.setdefault(net_id, out[label])
    return out


def networks(server: Mapping[str, Any], ports: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Heat's ``networks``: the IPs per network name and per network id."""
    return {label: [item["addr"] for item in items]
            for label, items in addresses(server, ports).items()}


def first_address(server: Mapping[str, Any]) -> str:
    """Heat's ``first_address``: the first address of the last network by name, or ''."""
    for label in sorted(server.get("addresses") or {}, reverse=True):
        entries = server["addresses"][label] or []
        if entries:
            return str(entries[0].get("addr") or "")
    return ""


# Nova statuses a server passes through on its way to ACTIVE (Heat's deferred statuses).
DEFERRED: Final = frozenset({"BUILD", "HARD_REBOOT", "PASSWORD", "REBOOT", "RESCUE", "RESIZE",
                             "REVERT_RESIZE", "SHUTOFF", "SUSPENDED", "VERIFY_RESIZE"})


def server_status(server: Mapping[str, Any]) -> str:
    # Some clouds add "(...)" to the status; Heat keeps what comes before it.
    return str(server.get("status") or "").split("(")[0]


def gone(server_id: str) -> Failed:
    """A server deleted behind Ember's back while it waited on it: made again, as one gone ERROR is
    (Heat fails there with Nova's 404)."""
    return Failed(f"Server {server_id} is gone from the cloud", error="ResourceInError", remake=True)


def in_error(server: Mapping[str, Any]) -> Failed:
    fault = server.get("fault") or {}
    return Failed(f'Went to status ERROR due to "Message: {fault.get("message", "Unknown")}, '
                  f'Code: {fault.get("code", "Unknown")}"', error="ResourceInError")
