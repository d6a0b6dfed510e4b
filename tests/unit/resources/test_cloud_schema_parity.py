"""The Nova, Cinder and Glance types show Heat's schemas (``GET /resource_types/<type>``).

The expectations were written down by reading Heat's plugins (properties_schema and
attributes_schema of nova/server.py, keypair.py, server_group.py, flavor.py,
cinder/volume.py, glance/image.py): name -> (type, update_allowed, required).
Hidden properties are accepted but not shown, as in Heat.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.resources.resource_support import plugin

S, INT, N, B, M, L = "string", "integer", "number", "boolean", "map", "list"

EXPECTED: dict[str, dict[str, tuple[str, bool, bool]]] = {
    "OS::Nova::Server": {
        "name": (S, True, False), "image": (S, True, False), "block_device_mapping": (L, False, False),
        "block_device_mapping_v2": (L, False, False), "flavor": (S, True, True),
        "flavor_update_policy": (S, True, False), "image_update_policy": (S, True, False),
        "key_name": (S, False, False), "availability_zone": (S, False, False),
        "security_groups": (L, False, False), "networks": (L, True, False),
        "scheduler_hints": (M, False, False), "metadata": (M, True, False),
        "user_data_format": (S, False, False), "user_data": (S, True, False),
        "reservation_id": (S, False, False), "config_drive": (B, False, False),
        "diskConfig": (S, False, False), "personality": (M, False, False), "admin_pass": (S, True, False),
        "software_config_transport": (S, True, False), "user_data_update_policy": (S, True, False),
        "tags": (L, True, False), "deployment_swift_data": (M, True, False),
    },
    "OS::Nova::KeyPair": {
        "name": (S, False, True), "save_private_key": (B, False, False), "public_key": (S, False, False),
        "type": (S, False, False), "user": (S, False, False),
    },
    "OS::Nova::ServerGroup": {"name": (S, False, False), "policies": (L, False, False),
                              "rules": (M, False, False)},
    "OS::Nova::Flavor": {
        "tenants": (L, True, False), "flavorid": (S, False, False), "name": (S, False, False),
        "ram": (INT, False, True), "vcpus": (INT, False, True), "disk": (INT, False, False),
        "swap": (INT, False, False), "ephemeral": (INT, False, False), "rxtx_factor": (N, False, False),
        "extra_specs": (M, True, False), "is_public": (B, False, False),
    },
    "OS::Cinder::Volume": {
        "availability_zone": (S, False, False), "size": (INT, True, False), "snapshot_id": (S, False, False),
        "backup_id": (S, True, False), "name": (S, True, False), "description": (S, True, False),
        "volume_type": (S, True, False), "metadata": (M, True, False), "image": (S, False, False),
        "source_volid": (S, False, False), "scheduler_hints": (M, False, False),
        "read_only": (B, True, False),
    },
    "OS::Cinder::VolumeAttachment": {"instance_uuid": (S, True, True), "volume_id": (S, True, True),
                                     "mountpoint": (S, True, False)},
    "OS::Glance::WebImage": {
        "name": (S, False, False), "id": (S, False, False), "min_disk": (INT, False, False),
        "min_ram": (INT, False, False), "protected": (B, True, False), "disk_format": (S, False, True),
        "container_format": (S, False, True), "location": (S, False, True), "tags": (L, True, False),
        "architecture": (S, True, False), "kernel_id": (S, True, False), "os_distro": (S, True, False),
        "os_version": (S, True, False), "owner": (S, True, False), "extra_properties": (M, True, False),
        "visibility": (S, True, False), "ramdisk_id": (S, True, False), "active": (B, True, False),
        "members": (L, True, False),
    },
}

ATTRIBUTES: dict[str, set[str]] = {
    "OS::Nova::Server": {"name", "addresses", "networks", "instance_name", "accessIPv4", "accessIPv6",
                         "console_urls", "tags", "os_collect_config", "show"},  # first_address: hidden
    "OS::Nova::KeyPair": {"public_key", "private_key", "show"},
    "OS::Nova::ServerGroup": {"show"},
    "OS::Nova::Flavor": {"is_public", "extra_specs", "show"},
    "OS::Cinder::Volume": {"availability_zone", "size", "snapshot_id", "display_name",
                           "display_description", "volume_type", "metadata", "source_volid", "status",
                           "created_at", "bootable", "metadata_values", "encrypted", "attachments",
                           "attachments_list", "multiattach", "show"},
    "OS::Cinder::VolumeAttachment": {"show"},
    "OS::Glance::WebImage": {"show"},
}

# Custom constraints Heat puts on properties (top level, or "parent.key" inside a list/map).
CONSTRAINTS: list[tuple[str, str, str]] = [
    ("OS::Nova::Server", "flavor", "nova.flavor"), ("OS::Nova::Server", "image", "glance.image"),
    ("OS::Nova::Server", "key_name", "nova.keypair"),
    ("OS::Nova::Server", "networks.network", "neutron.network"),
    ("OS::Nova::Server", "networks.port", "neutron.port"),
    ("OS::Nova::Server", "networks.subnet", "neutron.subnet"),
    ("OS::Nova::Server", "networks.fixed_ip", "ip_addr"),
    ("OS::Nova::Server", "block_device_mapping_v2.volume_id", "cinder.volume"),
    ("OS::Nova::Server", "block_device_mapping_v2.volume_type", "cinder.vtype"),
    ("OS::Cinder::Volume", "volume_type", "cinder.vtype"), ("OS::Cinder::Volume", "image", "glance.image"),
    ("OS::Cinder::Volume", "source_volid", "cinder.volume"),
    ("OS::Cinder::VolumeAttachment", "volume_id", "cinder.volume"),
]


@pytest.mark.parametrize("type_name", sorted(EXPECTED))
def test_properties_as_heat_shows_them(type_name: str) -> None:
    shown = plugin(type_name).schema_api()["properties"]
    assert {name: (p["type"], p["update_allowed"], p["required"]) for name, p in shown.items()} == \
        EXPECTED[type_name]


@pytest.mark.parametrize("type_name", sorted(ATTRIBUTES))
def test_attributes_as_heat_shows_them(type_name: str) -> None:
    assert set(plugin(type_name).schema_api()["attributes"]) == ATTRIBUTES[type_name]


def _prop(shown: dict[str, Any], path: str) -> dict[str, Any]:
    parent, _, key = path.partition(".")
    prop: dict[str, Any] = shown[parent]
    if key:
        inner = prop["schema"]
        prop = (inner["*"]["schema"] if "*" in inner else inner)[key]
    return prop


@pytest.mark.parametrize(("type_name", "path", "constraint"), CONSTRAINTS)
def test_custom_constraints(type_name: str, path: str, constraint: str) -> None:
    prop = _prop(plugin(type_name).schema_api()["properties"], path)
    assert {"custom_constraint": constraint} in [
        {k: v for k, v in c.items() if k == "custom_constraint"} for c in prop.get("constraints", [])]


@pytest.mark.parametrize(("type_name", "name", "default"), [
    ("OS::Nova::Server", "flavor_update_policy", "RESIZE"),
    ("OS::Nova::Server", "image_update_policy", "REBUILD"),
    ("OS::Nova::Server", "user_data_update_policy", "REPLACE"),
    ("OS::Nova::Server", "user_data_format", "HEAT_CFNTOOLS"),
    # Heat's is a setting (default_software_config_transport, POLL_SERVER_CFN out of the box);
    # Ember has no CFN API, its agents poll its own.
    ("OS::Nova::Server", "software_config_transport", "POLL_SERVER_HEAT"),
    ("OS::Nova::ServerGroup", "policies", ["anti-affinity"]),
    ("OS::Nova::Flavor", "rxtx_factor", 1.0),
    ("OS::Glance::WebImage", "visibility", "private"),
])
def test_defaults(type_name: str, name: str, default: Any) -> None:
    assert plugin(type_name).schema_api()["properties"][name]["default"] == default
