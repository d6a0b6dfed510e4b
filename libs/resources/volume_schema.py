"""``OS::Cinder::Volume``'s property and attribute schemas: Heat's names, types and rules, Ember's words."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from libs.resources.attributes import AttrSchema
from libs.resources.properties import PropSchema
from libs.template.constraints import CustomConstraint, Range

AVAILABILITY_ZONE = "availability_zone"
SIZE = "size"
SNAPSHOT_ID = "snapshot_id"
BACKUP_ID = "backup_id"
NAME = "name"
DESCRIPTION = "description"
VOLUME_TYPE = "volume_type"
METADATA = "metadata"
IMAGE_REF = "imageRef"
IMAGE = "image"
SOURCE_VOLID = "source_volid"
SCHEDULER_HINTS = "scheduler_hints"
READ_ONLY = "read_only"
MULTI_ATTACH = "multiattach"

def _custom(*names: str) -> tuple[CustomConstraint, ...]:
    return tuple(CustomConstraint(n) for n in names)


PROPERTIES: Final[Mapping[str, PropSchema]] = {
    AVAILABILITY_ZONE: PropSchema("string", "The availability zone to make the volume in."),
    SIZE: PropSchema("integer", "Size of the volume in GB (may grow in place).", update_allowed=True,
                     constraints=(Range(min=1),)),
    SNAPSHOT_ID: PropSchema("string", "A snapshot to make the volume from.",
                            constraints=_custom("cinder.snapshot")),
    BACKUP_ID: PropSchema("string", "A backup to restore the volume from.", update_allowed=True,
                          constraints=_custom("cinder.backup")),
    NAME: PropSchema("string", "Volume name; the physical name when omitted.", update_allowed=True),
    DESCRIPTION: PropSchema("string", "Volume description.", update_allowed=True),
    VOLUME_TYPE: PropSchema("string", "The volume type (changes by retype).", update_allowed=True,
                            constraints=_custom("cinder.vtype")),
    METADATA: PropSchema("map", "Key/value metadata of the volume.", update_allowed=True, default={}),
    IMAGE_REF: PropSchema("string", "Former name of image.", support_status="HIDDEN"),
    IMAGE: PropSchema("string", "An image (name or id) to make a bootable volume from.",
                      constraints=_custom("glance.image")),
    SOURCE_VOLID: PropSchema("string", "A volume to clone.", constraints=_custom("cinder.volume")),
    SCHEDULER_HINTS: PropSchema("map", "Hints for Cinder's scheduler."),
    READ_ONLY: PropSchema("boolean", "Whether the volume is attached read-only.", update_allowed=True),
    MULTI_ATTACH: PropSchema("boolean", "Whether more than one server may attach it.", default=False,
                             support_status="HIDDEN"),
}

_STRING_ATTRS: Final = {
    "availability_zone": "The volume's availability zone.", "size": "The volume's size in GB.",
    "snapshot_id": "The snapshot it was made from.", "display_name": "The volume's name.",
    "display_description": "The volume's description.", "volume_type": "The volume's type.",
    "metadata": "The volume's metadata as JSON text.", "source_volid": "The volume it was cloned from.",
    "status": "The volume's status.", "created_at": "When it was made.",
    "bootable": "Whether it can be booted from.", "encrypted": "Whether it is encrypted.",
}
ATTRIBUTES: Final[Mapping[str, AttrSchema]] = {
    **{name: AttrSchema(text, "string") for name, text in list(_STRING_ATTRS.items())[:11]},
    "metadata_values": AttrSchema("The volume's metadata as a map.", "map"),
    "encrypted": AttrSchema(_STRING_ATTRS["encrypted"], "string"),
    "attachments": AttrSchema("The volume's attachments, as text.", "string", support_status="DEPRECATED"),
    "attachments_list": AttrSchema("The volume's attachments.", "list"),
    "multiattach": AttrSchema("Whether more than one server may attach it.", "boolean"),
}

# Attribute name -> the key of the sdk's volume dict it is read from.
ATTRIBUTE_SOURCES: Final = {
    "availability_zone": "availability_zone", "size": "size", "snapshot_id": "snapshot_id",
    "display_name": "name", "display_description": "description", "volume_type": "volume_type",
    "source_volid": "source_volume_id", "status": "status", "created_at": "created_at",
    "encrypted": "is_encrypted",
}
