"""``OS::Nova::Server``'s property and attribute schemas: Heat's names, types, defaults and rules.

The descriptions are Ember's words; names, types, defaults, constraints and which
properties change in place are Heat's (heat/engine/resources/openstack/nova/server.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from libs.resources.attributes import AttrSchema
from libs.resources.properties import PropSchema
from libs.template.constraints import AllowedValues, CustomConstraint, Length, Range

# Properties.
NAME = "name"
IMAGE = "image"
BLOCK_DEVICE_MAPPING = "block_device_mapping"
BLOCK_DEVICE_MAPPING_V2 = "block_device_mapping_v2"
FLAVOR = "flavor"
FLAVOR_UPDATE_POLICY = "flavor_update_policy"
IMAGE_UPDATE_POLICY = "image_update_policy"
KEY_NAME = "key_name"
ADMIN_USER = "admin_user"
AVAILABILITY_ZONE = "availability_zone"
SECURITY_GROUPS = "security_groups"
NETWORKS = "networks"
SCHEDULER_HINTS = "scheduler_hints"
METADATA = "metadata"
USER_DATA_FORMAT = "user_data_format"
USER_DATA = "user_data"
RESERVATION_ID = "reservation_id"
CONFIG_DRIVE = "config_drive"
DISK_CONFIG = "diskConfig"
PERSONALITY = "personality"
ADMIN_PASS = "admin_pass"
SOFTWARE_CONFIG_TRANSPORT = "software_config_transport"
USER_DATA_UPDATE_POLICY = "user_data_update_policy"
TAGS = "tags"
DEPLOYMENT_SWIFT_DATA = "deployment_swift_data"

# Keys of a ``networks`` entry.
NET_UUID = "uuid"
NET_NETWORK = "network"
NET_FIXED_IP = "fixed_ip"
NET_PORT = "port"
NET_SUBNET = "subnet"
NET_PORT_EXTRA = "port_extra_properties"
NET_FLOATING_IP = "floating_ip"
NET_ALLOCATE = "allocate_network"
NET_TAG = "tag"

# Keys of a block device mapping.
BDM_DEVICE_NAME = "device_name"
BDM_VOLUME_ID = "volume_id"
BDM_IMAGE_ID = "image_id"
BDM_IMAGE = "image"
BDM_SNAPSHOT_ID = "snapshot_id"
BDM_SWAP_SIZE = "swap_size"
BDM_DEVICE_TYPE = "device_type"
BDM_DISK_BUS = "disk_bus"
BDM_BOOT_INDEX = "boot_index"
BDM_VOLUME_SIZE = "volume_size"
BDM_DELETE_ON_TERM = "delete_on_termination"
BDM_EPHEMERAL_SIZE = "ephemeral_size"
BDM_EPHEMERAL_FORMAT = "ephemeral_format"
BDM_VOLUME_TYPE = "volume_type"

# user_data_format and software_config_transport values.
HEAT_CFNTOOLS = "HEAT_CFNTOOLS"
RAW = "RAW"
SOFTWARE_CONFIG = "SOFTWARE_CONFIG"
USER_DATA_FORMATS: Final = (HEAT_CFNTOOLS, RAW, SOFTWARE_CONFIG)
TRANSPORTS: Final = ("POLL_SERVER_CFN", "POLL_SERVER_HEAT", "POLL_TEMP_URL", "ZAQAR_MESSAGE")

# Attributes.
ATTR_NAME = "name"
ADDRESSES = "addresses"
NETWORKS_ATTR = "networks"
FIRST_ADDRESS = "first_address"
INSTANCE_NAME = "instance_name"
ACCESS_IPV4 = "accessIPv4"
ACCESS_IPV6 = "accessIPv6"
CONSOLE_URLS = "console_urls"
TAGS_ATTR = "tags"
OS_COLLECT_CONFIG = "os_collect_config"


def _string(description: str, *constraints: str, required: bool = False, update_allowed: bool = False
            ) -> PropSchema:
    return PropSchema("string", description, required=required, update_allowed=update_allowed,
                      constraints=tuple(CustomConstraint(c) for c in constraints))


_BDM_V1: Final = PropSchema("map", schema={
    BDM_DEVICE_NAME: _string("Where the volume shows in the server (vda...).", required=True),
    BDM_VOLUME_ID: _string("The volume to attach (this or snapshot_id).", "cinder.volume"),
    BDM_SNAPSHOT_ID: _string("A snapshot to make the volume from.", "cinder.snapshot"),
    BDM_VOLUME_SIZE: PropSchema("integer", "Size of the volume in GB; the cloud works it out when omitted."),
    BDM_DELETE_ON_TERM: PropSchema("boolean", "Whether the volume goes with the server."),
})

_BDM_V2: Final = PropSchema("map", schema={
    BDM_DEVICE_NAME: _string("Where the device shows in the server; the cloud picks when omitted."),
    BDM_VOLUME_ID: _string("The volume to attach.", "cinder.volume"),
    BDM_IMAGE_ID: PropSchema("string", "Former name of image.", support_status="HIDDEN",
                             constraints=(CustomConstraint("glance.image"),)),
    BDM_IMAGE: _string("The image to make a volume from.", "glance.image"),
    BDM_SNAPSHOT_ID: _string("The snapshot to make a volume from.", "cinder.snapshot"),
    BDM_SWAP_SIZE: PropSchema("integer", "Size of a swap device in MB."),
    BDM_EPHEMERAL_SIZE: PropSchema("integer", "Size of a local ephemeral disk in GB.",
                                   constraints=(Range(min=1),)),
    BDM_EPHEMERAL_FORMAT: PropSchema("string", "The file system of the ephemeral disk.",
                                     constraints=(AllowedValues(("ext2", "ext3", "ext4", "xfs", "ntfs")),)),
    BDM_DEVICE_TYPE: PropSchema("string", "The kind of device.",
                                constraints=(AllowedValues(("cdrom", "disk")),)),
    BDM_DISK_BUS: PropSchema("string", "The bus the device sits on.", constraints=(AllowedValues(
        ("ide", "lame_bus", "scsi", "usb", "virtio")),)),
    BDM_BOOT_INDEX: PropSchema("integer", "Boot order of the device (0 boots first)."),
    BDM_VOLUME_SIZE: PropSchema("integer", "Size of the volume in GB."),
    BDM_DELETE_ON_TERM: PropSchema("boolean", "Whether the volume goes with the server."),
    BDM_VOLUME_TYPE: _string("The volume type of a volume made for the server.", "cinder.vtype"),
})

_NETWORK: Final = PropSchema("map", schema={
    NET_UUID: PropSchema("string", "Former name of network.", support_status="HIDDEN",
                         constraints=(CustomConstraint("neutron.network"),)),
    NET_NETWORK: _string("Name or id of the network to connect the server to.", "neutron.network"),
    NET_ALLOCATE: PropSchema("string", "auto: a network the project has (or one made for it); "
                             "none: no network. Excludes the other keys.",
                             constraints=(AllowedValues(("none", "auto")),), update_allowed=True),
    NET_FIXED_IP: _string("The fixed IP address the server gets on the network.", "ip_addr"),
    NET_PORT: _string("An existing port to plug the server into.", "neutron.port"),
    NET_PORT_EXTRA: PropSchema("map", "Properties of the port made for this entry.", update_allowed=True),
    NET_SUBNET: _string("The subnet the server's port takes its address from.", "neutron.subnet"),
    NET_FLOATING_IP: _string("A floating IP to associate with this entry's port."),
    NET_TAG: _string("A tag for the server's port (ignored on update)."),
})

PROPERTIES: Final[Mapping[str, PropSchema]] = {
    NAME: PropSchema("string", "Server name; the physical name when omitted.", update_allowed=True),
    IMAGE: _string("The image (name or id) the server boots.", "glance.image", update_allowed=True),
    BLOCK_DEVICE_MAPPING: PropSchema("list", "Volumes to attach (Nova's first mapping format).",
                                     schema=_BDM_V1),
    BLOCK_DEVICE_MAPPING_V2: PropSchema("list", "Devices to attach, in Nova's second mapping format.",
                                        schema=_BDM_V2),
    FLAVOR: _string("The flavor (name or id) of the server.", "nova.flavor", required=True,
                    update_allowed=True),
    FLAVOR_UPDATE_POLICY: PropSchema(
        "string", "How a flavor change is applied: RESIZE in place, or REPLACE the server.",
        default="RESIZE", constraints=(AllowedValues(("RESIZE", "REPLACE")),), update_allowed=True),
    IMAGE_UPDATE_POLICY: PropSchema(
        "string", "How an image change is applied: REBUILD in place (optionally keeping the "
        "ephemeral disk), or REPLACE the server.", default="REBUILD",
        constraints=(AllowedValues(("REBUILD", "REPLACE", "REBUILD_PRESERVE_EPHEMERAL")),),
        update_allowed=True),
    KEY_NAME: _string("The key pair injected into the server.", "nova.keypair"),
    ADMIN_USER: PropSchema("string", "Former administrative user name.", support_status="HIDDEN"),
    AVAILABILITY_ZONE: PropSchema("string", "The availability zone to place the server in."),
    SECURITY_GROUPS: PropSchema("list", "Security group names or ids (not with ports given).",
                                default=[]),
    NETWORKS: PropSchema("list", "The server's network interfaces, in order.", schema=_NETWORK,
                         update_allowed=True),
    SCHEDULER_HINTS: PropSchema("map", "Hints the scheduler reads."),
    METADATA: PropSchema("map", "Key/value metadata of the server.", update_allowed=True, default={}),
    USER_DATA_FORMAT: PropSchema(
        "string", "How user_data reaches the server: HEAT_CFNTOOLS (multipart, for heat-cfntools), "
        "RAW (as given), SOFTWARE_CONFIG (multipart, with software deployment metadata).",
        default=HEAT_CFNTOOLS, constraints=(AllowedValues(USER_DATA_FORMATS),)),
    SOFTWARE_CONFIG_TRANSPORT: PropSchema(
        "string", "How the server receives software deployment metadata; Ember's agents poll its API "
        "(POLL_SERVER_HEAT) whichever is named.",
        default="POLL_SERVER_HEAT", update_allowed=True, constraints=(AllowedValues(TRANSPORTS),)),
    USER_DATA_UPDATE_POLICY: PropSchema(
        "string", "How a user_data change is applied: REPLACE the server, IGNORE it, or REBUILD.",
        default="REPLACE", constraints=(AllowedValues(("REPLACE", "IGNORE", "REBUILD")),),
        update_allowed=True),
    USER_DATA: PropSchema("string", "Data the server's init system runs or reads.", default="",
                          update_allowed=True),
    RESERVATION_ID: PropSchema("string", "A UUID grouping servers requested together."),
    CONFIG_DRIVE: PropSchema("boolean", "Whether the server gets a config drive."),
    DISK_CONFIG: PropSchema("string", "How the disk is partitioned at boot.",
                            constraints=(AllowedValues(("AUTO", "MANUAL")),)),
    PERSONALITY: PropSchema("map", "Files to write into the server at boot (path: contents).",
                            default={}, support_status="DEPRECATED"),
    ADMIN_PASS: PropSchema("string", "The administrator password.", update_allowed=True),
    TAGS: PropSchema("list", "Tags of the server.", schema=PropSchema("string"), update_allowed=True),
    DEPLOYMENT_SWIFT_DATA: PropSchema(
        "map", "Swift container and object for deployment data (POLL_TEMP_URL).", default={},
        update_allowed=True, schema={
            "container": PropSchema("string", "The container.", constraints=(Length(min=1),)),
            "object": PropSchema("string", "The object.", constraints=(Length(min=1),)),
        }),
}

ATTRIBUTES: Final[Mapping[str, AttrSchema]] = {
    ATTR_NAME: AttrSchema("The server's name.", "string"),
    ADDRESSES: AttrSchema("The server's addresses by network name and by network id; each "
                          "with its port id.", "map"),
    NETWORKS_ATTR: AttrSchema("The server's IP addresses by network name and by network id.", "map"),
    FIRST_ADDRESS: AttrSchema("The first address the server has (or '').", support_status="HIDDEN"),
    INSTANCE_NAME: AttrSchema("The hypervisor's name of the server.", "string"),
    ACCESS_IPV4: AttrSchema("The server's manually set public IPv4 address.", "string"),
    ACCESS_IPV6: AttrSchema("The server's manually set public IPv6 address.", "string"),
    CONSOLE_URLS: AttrSchema("URLs of the server's consoles by type.", "map"),
    TAGS_ATTR: AttrSchema("The server's tags.", "list"),
    OS_COLLECT_CONFIG: AttrSchema("Configuration of the server's os-collect-config agent.", "map"),
}
