"""The service catalog Keystone hands out: one entry per service type, endpoints on the caller's host.

Services are mounted under their prefix (``/compute``...); the endpoint in the
catalog is where openstacksdk sends a call's path to.
"""

from __future__ import annotations

import dataclasses
import hashlib

from libs.simcloud.state import ServiceName

REGION = "RegionOne"


@dataclasses.dataclass(frozen=True)
class Entry:
    type: str
    name: str
    service: ServiceName
    path: str  # under the host; "{project_id}" is the token's project


ENTRIES = (
    Entry("identity", "keystone", ServiceName.IDENTITY, "/identity"),
    Entry("compute", "nova", ServiceName.COMPUTE, "/compute/v2.1"),
    Entry("image", "glance", ServiceName.IMAGE, "/image"),
    Entry("network", "neutron", ServiceName.NETWORK, "/network"),
    Entry("block-storage", "cinder", ServiceName.VOLUME, "/volume/v3/{project_id}"),
    Entry("volumev3", "cinderv3", ServiceName.VOLUME, "/volume/v3/{project_id}"),
)


def _stable_id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:32]


def catalog(base: str, project_id: str | None) -> list[dict[str, object]]:
    """Keystone v3's ``catalog`` for a token of ``project_id`` reached at ``base``."""
    result: list[dict[str, object]] = []
    for entry in ENTRIES:
        url = base + entry.path.replace("{project_id}", project_id or "")
        url = url.rstrip("/")
        endpoints = [{"id": _stable_id(entry.type, interface), "interface": interface, "region": REGION,
                      "region_id": REGION, "url": url} for interface in ("public", "internal", "admin")]
        result.append({"id": _stable_id(entry.type), "type": entry.type, "name": entry.name,
                       "endpoints": endpoints})
    return result
