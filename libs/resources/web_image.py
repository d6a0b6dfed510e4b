"""``OS::Glance::WebImage``: a Glance image imported from a URL (Glance's web-download import).

Create: the image record (carrying ``ctx.cloud_tag`` in the extra property
``ember_resource``, by which a lost create is found again), then the import, then
Glance is asked until the image is ``active`` (``deactivated`` when ``active`` is
false; ``killed`` fails it). Tags, extra properties and the other mutable fields change
in place; the rest replaces it, as in Heat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall
from libs.engine.status import Action
from libs.resources.base import SupportStatus
from libs.resources.cloud_object import CREATED, DELETED, FOUND, CloudObject
from libs.resources.cloud_steps import (
    TAG_KEY,
    call,
    cloud_failure,
    dumps,
    image,
    loads,
    poll_delay,
    polled,
    tagged,
)
from libs.resources.properties import PropSchema, PropType
from libs.resources.steps import Done, Failed, StepContext, StepResult
from libs.template.constraints import AllowedPattern, AllowedValues, Range
from libs.template.errors import StackValidationFailed

NAME, IMAGE_ID, MIN_DISK, MIN_RAM, PROTECTED = "name", "id", "min_disk", "min_ram", "protected"
DISK_FORMAT, CONTAINER_FORMAT, LOCATION, TAGS = "disk_format", "container_format", "location", "tags"
ARCHITECTURE, KERNEL_ID, OS_DISTRO, OS_VERSION = "architecture", "kernel_id", "os_distro", "os_version"
OWNER, EXTRA_PROPERTIES, VISIBILITY, RAMDISK_ID = "owner", "extra_properties", "visibility", "ramdisk_id"
ACTIVE, MEMBERS = "active", "members"

_UUID: Final = ("^([0-9a-fA-F]){8}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-([0-9a-fA-F]){4}-"
                "([0-9a-fA-F]){12}$")
IMAGE_KEY: Final = "image"
# Properties passed to Glance under the sdk's attribute names.
_FIELDS: Final = {MIN_DISK: "min_disk", MIN_RAM: "min_ram", PROTECTED: "is_protected",
                  DISK_FORMAT: "disk_format", CONTAINER_FORMAT: "container_format", TAGS: "tags",
                  ARCHITECTURE: "architecture", KERNEL_ID: "kernel_id", OS_DISTRO: "os_distro",
                  OS_VERSION: "os_version", OWNER: "owner_id", VISIBILITY: "visibility",
                  RAMDISK_ID: "ramdisk_id", IMAGE_ID: "id"}


def _mutable(kind: PropType, text: str, **options: Any) -> PropSchema:
    return PropSchema(kind, text, update_allowed=True, **options)


class WebImage(CloudObject):
    """A Glance image downloaded by Glance from a URL."""

    type_name: ClassVar[str] = "OS::Glance::WebImage"
    heat_class: ClassVar[str | None] = "GlanceWebImage"
    description: ClassVar[str] = (
        "A Glance image that Glance downloads from a URL (web-download import), with its formats, "
        "minimums, visibility and properties.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="12.0.0")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The image's name."),
        IMAGE_ID: PropSchema("string", "The image's id; Glance chooses when omitted."),
        MIN_DISK: PropSchema("integer", "Least disk (GB) to boot it.", default=0,
                             constraints=(Range(min=0),)),
        MIN_RAM: PropSchema("integer", "Least RAM (MB) to boot it.", default=0,
                            constraints=(Range(min=0),)),
        PROTECTED: _mutable("boolean", "Whether the image may not be deleted.", default=False),
        DISK_FORMAT: PropSchema("string", "The disk format.", required=True, constraints=(AllowedValues(
            ("ami", "ari", "aki", "vhd", "vhdx", "vmdk", "raw", "qcow2", "vdi", "iso", "ploop")),)),
        CONTAINER_FORMAT: PropSchema("string", "The container format.", required=True,
                                     constraints=(AllowedValues(
                                         ("ami", "ari", "aki", "bare", "ovf", "ova", "docker")),)),
        LOCATION: PropSchema("string", "The URL Glance downloads the image from.", required=True),
        TAGS: _mutable("list", "Tags of the image."),
        ARCHITECTURE: _mutable("string", "CPU architecture the image needs."),
        KERNEL_ID: _mutable("string", "Kernel image id (AMI images).", constraints=(AllowedPattern(_UUID),)),
        OS_DISTRO: _mutable("string", "The operating system's distribution."),
        OS_VERSION: _mutable("string", "The operating system's version."),
        OWNER: _mutable("string", "The project owning the image."),
        EXTRA_PROPERTIES: _mutable("map", "More image properties.", default={}),
        VISIBILITY: _mutable("string", "Who sees the image.", default="private",
                             constraints=(AllowedValues(("public", "private", "community", "shared")),)),
        RAMDISK_ID: _mutable("string", "Ramdisk image id (AMI images).",
                             constraints=(AllowedPattern(_UUID),)),
        ACTIVE: _mutable("boolean", "Whether the image is active (false: deactivated).", default=True),
        MEMBERS: _mutable("list", "Projects a shared image is shared with.", schema=PropSchema("string")),
    }

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        container = properties.get(CONTAINER_FORMAT)
        if container in ("ami", "ari", "aki") and properties.get(DISK_FORMAT) != container:
            raise StackValidationFailed(
                "Invalid mix of disk and container formats. When setting a disk or container format "
                "to one of 'aki', 'ari', or 'ami', the container and disk formats must match.")
        if properties.get(MEMBERS) and properties.get(VISIBILITY) != "shared":
            raise StackValidationFailed(f"{MEMBERS} property requires {VISIBILITY} to be shared")

    def image_name(self, ctx: StepContext) -> str:
        return ctx.properties.get(NAME) or self.physical_resource_name(ctx)

    def create_call(self, ctx: StepContext) -> CloudCall:
        props = ctx.properties
        kwargs: dict[str, Any] = {"name": self.image_name(ctx), "allow_duplicates": True}
        kwargs.update({field: props[prop] for prop, field in _FIELDS.items() if props.get(prop) is not None})
        kwargs.update({str(k): v for k, v in (props.get(EXTRA_PROPERTIES) or {}).items()})
        kwargs[TAG_KEY] = ctx.cloud_tag
        return image(CREATED, "create_image", **kwargs)

    def find_call(self, ctx: StepContext) -> CloudCall:
        return image(FOUND, "images", name=self.image_name(ctx))

    def found(self, ctx: StepContext, answer: Any) -> Mapping[str, Any] | None:
        return tagged(answer, ctx.cloud_tag)

    def get_call(self, physical_id: str) -> CloudCall | None:
        return image(IMAGE_KEY, "get_image", physical_id)

    def is_gone(self, shown: Any) -> bool:
        return isinstance(shown, Mapping) and shown.get("status") in ("deleted", "killed")

    def delete_call(self, physical_id: str) -> CloudCall:
        return image(DELETED, "delete_image", physical_id, ignore_missing=True)

    def after_create(self, ctx: StepContext, made: Mapping[str, Any], adopted: bool) -> StepResult:
        image_id = self.physical_id_of(made)
        if adopted and made.get("status") not in (None, "queued"):
            return call("importing", image(IMAGE_KEY, "get_image", image_id), physical_id=image_id)
        # The sdk checks the formats on the image it is given before it imports: a dict gives them.
        shown = {"id": image_id, "container_format": ctx.properties[CONTAINER_FORMAT],
                 "disk_format": ctx.properties[DISK_FORMAT]}
        calls = [image("import", "import_image", shown, method="web-download", uri=ctx.properties[LOCATION])]
        calls += [image(f"member_{i}", "add_member", image_id, member_id=m)
                  for i, m in enumerate(ctx.properties.get(MEMBERS) or ())]
        return call("import", *calls, physical_id=image_id)

    def more_create(self, ctx: StepContext, step: str) -> StepResult:
        image_id = str(ctx.physical_id)
        get = image(IMAGE_KEY, "get_image", image_id)
        if step == "import":
            imported = ctx.answers.get("import")
            if imported is not None and imported.error is not None:
                return cloud_failure(imported.error)
            return call("importing", get, delay=poll_delay(ctx))
        if step == "deactivate":
            return call("importing", get, delay=poll_delay(ctx))
        found = polled(ctx, IMAGE_KEY, "importing", get)
        if not isinstance(found, Mapping):
            return found
        status = found.get("status")
        if status == "killed":
            return Failed('Went to status killed due to "Unknown"', error="ResourceInError")
        wanted = "active" if ctx.properties[ACTIVE] else "deactivated"
        if status == wanted:
            return Done(data={"phase": None, IMAGE_KEY: dumps(dict(found))})
        if status == "active":  # and it should not be
            return call("deactivate", image("deactivate", "deactivate_image", image_id))
        return call("importing", get, delay=poll_delay(ctx))

    def start_update(self, ctx: StepContext) -> StepResult:
        old, new = ctx.old_properties or {}, ctx.properties
        image_id = str(ctx.physical_id)
        calls: list[CloudCall] = []
        if old.get(ACTIVE) != new.get(ACTIVE):
            method = "reactivate_image" if new[ACTIVE] else "deactivate_image"
            calls.append(image("active", method, image_id))
        old_tags, new_tags = set(old.get(TAGS) or ()), set(new.get(TAGS) or ())
        calls += [image(f"tag_add_{i}", "add_tag", image_id, t)
                  for i, t in enumerate(sorted(new_tags - old_tags))]
        calls += [image(f"tag_remove_{i}", "remove_tag", image_id, t)
                  for i, t in enumerate(sorted(old_tags - new_tags))]
        old_members, new_members = set(old.get(MEMBERS) or ()), set(new.get(MEMBERS) or ())
        calls += [image(f"member_add_{i}", "add_member", image_id, member_id=m)
                  for i, m in enumerate(sorted(new_members - old_members))]
        calls += [image(f"member_remove_{i}", "remove_member", m, image=image_id)
                  for i, m in enumerate(sorted(old_members - new_members))]
        fields = {field: new.get(prop) for prop, field in _FIELDS.items()
                  if prop not in (TAGS, IMAGE_ID) and old.get(prop) != new.get(prop)}
        if old.get(EXTRA_PROPERTIES) != new.get(EXTRA_PROPERTIES):
            fields.update(new.get(EXTRA_PROPERTIES) or {})
        if fields:
            calls.append(image("fields", "update_image", image_id, **fields))
        if not calls:
            return Done()
        return call("update", *calls)

    def check_other(self, action: Action, ctx: StepContext, step: str) -> StepResult:
        if action is Action.UPDATE:
            for answer in ctx.answers.values():
                if answer.error is not None and not answer.not_found:
                    return cloud_failure(answer.error)
        return Done(data={"phase": None})

    def show(self, physical_id: str, data: Mapping[str, str]) -> Any:
        return loads(data, IMAGE_KEY)
