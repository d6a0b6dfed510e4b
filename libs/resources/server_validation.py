"""``OS::Nova::Server``'s own validation rules (Heat's ``Server.validate``, without the cloud).

Block device mappings (one format only, one source each, something bootable, one boot
source), ``networks`` entries (something to connect to, ``allocate_network`` alone,
no fixed IP with a port, a floating IP only where Ember has the port) and security
groups not with ports. The checks Heat makes against the cloud (image status, the
flavor's RAM and disk against the image's minimums, microversions) are left out.
Values not known yet (``UNKNOWN``) count as given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from libs.resources import server_schema as s
from libs.template.errors import StackValidationFailed


def _conflict(*props: str) -> StackValidationFailed:
    return StackValidationFailed(f"Cannot define the following properties at the same time: "
                                 f"{', '.join(props)}.")


def _list(value: Any) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def validate(props: Mapping[str, Any], resource_name: str) -> None:
    _block_devices(props, resource_name)
    networks = _list(props.get(s.NETWORKS))
    for entry in networks:
        _network(entry, resource_name)
    if any(e.get(s.NET_ALLOCATE) for e in networks) and len(networks) != 1:
        raise StackValidationFailed(f'Property "{s.NET_ALLOCATE}" can not be specified if multiple network '
                                    "interfaces set for server.")
    if any(e.get(s.NET_PORT) is not None for e in networks) and props.get(s.SECURITY_GROUPS):
        raise _conflict(s.SECURITY_GROUPS, f"{s.NETWORKS}/{s.NET_PORT}")


def _block_devices(props: Mapping[str, Any], name: str) -> None:
    bdm, bdm_v2 = _list(props.get(s.BLOCK_DEVICE_MAPPING)), _list(props.get(s.BLOCK_DEVICE_MAPPING_V2))
    if bdm and bdm_v2:
        raise _conflict(s.BLOCK_DEVICE_MAPPING, s.BLOCK_DEVICE_MAPPING_V2)
    if not isinstance(props.get(s.BLOCK_DEVICE_MAPPING_V2) or [], list):
        return  # not known yet
    bootable = props.get(s.IMAGE) is not None
    for mapping in bdm:
        if mapping.get(s.BDM_DEVICE_NAME) == "vda":
            bootable = True
        volume, snapshot = mapping.get(s.BDM_VOLUME_ID), mapping.get(s.BDM_SNAPSHOT_ID)
        if volume is not None and snapshot is not None:
            raise _conflict(s.BDM_VOLUME_ID, s.BDM_SNAPSHOT_ID)
        if volume is None and snapshot is None:
            raise StackValidationFailed("Either volume_id or snapshot_id must be specified for device "
                                        f"mapping {mapping.get(s.BDM_DEVICE_NAME)}")
    boot_sources: list[Any] = [props.get(s.IMAGE)]
    for mapping in bdm_v2:
        sources = _sources(mapping)
        if sources.count(None) < 4:
            raise _conflict(s.BDM_VOLUME_ID, s.BDM_SNAPSHOT_ID, s.BDM_IMAGE, s.BDM_SWAP_SIZE,
                            s.BDM_EPHEMERAL_SIZE, s.BDM_EPHEMERAL_FORMAT)
        if sources.count(None) == len(sources):
            raise StackValidationFailed("Either volume_id, snapshot_id, image_id, swap_size, ephemeral_size "
                                        "or ephemeral_format must be specified.")
        if any(source is not None for source in sources[:3]) and mapping.get(s.BDM_BOOT_INDEX) in (None, 0):
            bootable = True
            boot_sources += sources[:3]
    if not bootable:
        raise StackValidationFailed(f"Neither image nor bootable volume is specified for instance {name}")
    if bdm_v2 and len([b for b in boot_sources if b is not None]) != 1:
        raise StackValidationFailed(f"Multiple bootable sources for instance {name}.")


def _sources(mapping: Mapping[str, Any]) -> Sequence[Any]:
    image = mapping.get(s.BDM_IMAGE) or mapping.get(s.BDM_IMAGE_ID)
    ephemeral = mapping.get(s.BDM_EPHEMERAL_SIZE) or mapping.get(s.BDM_EPHEMERAL_FORMAT)
    return [mapping.get(s.BDM_VOLUME_ID), mapping.get(s.BDM_SNAPSHOT_ID), image,
            mapping.get(s.BDM_SWAP_SIZE), ephemeral]


def _network(entry: Mapping[str, Any], name: str) -> None:
    network = entry.get(s.NET_NETWORK) or entry.get(s.NET_UUID)
    port, subnet = entry.get(s.NET_PORT), entry.get(s.NET_SUBNET)
    allocate = entry.get(s.NET_ALLOCATE)
    if network is None and port is None and subnet is None and not allocate:
        raise StackValidationFailed(
            f'One of the properties "{s.NET_NETWORK}", "{s.NET_PORT}", "{s.NET_ALLOCATE}" or '
            f'"{s.NET_SUBNET}" should be set for the specified network of server "{name}".')
    if allocate and len([v for v in entry.values() if v is not None]) != 1:
        raise StackValidationFailed(f'Can not specify "{s.NET_ALLOCATE}" with other keys of networks at the '
                                    "same time.")
    if entry.get(s.NET_FIXED_IP) and port is not None:
        raise _conflict(f"{s.NETWORKS}/{s.NET_FIXED_IP}", f"{s.NETWORKS}/{s.NET_PORT}")
    only_network = network is not None and port is None and subnet is None and not entry.get(s.NET_PORT_EXTRA)
    if entry.get(s.NET_FLOATING_IP) is not None and only_network:
        raise StackValidationFailed(
            f'Property "{s.NET_FLOATING_IP}" is not supported if only "{s.NET_NETWORK}" is specified, '
            "because the corresponding port can not be retrieved.")
