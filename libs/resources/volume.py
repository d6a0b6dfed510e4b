"""``OS::Cinder::Volume``: a Cinder volume, made, extended, retyped and deleted through steps.

Create: look for a volume this resource made before a crash (listed by name, its
metadata carrying ``ctx.cloud_tag``), resolve the image, make the volume (or restore a
backup), then ask Cinder until it is ``available``. Delete: a volume in use is refused
(Heat's "Volume in use"), else deleted and asked for until Cinder answers 404.
Updates in place: name, description, metadata, volume type (retype), read-only flag
and a larger size (extend; a smaller one is refused as Heat refuses it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, ErrorKind, Service
from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import OBSERVE_KEY, ResourceType, SupportStatus
from libs.resources.cloud_steps import (
    LISTED,
    TAG_KEY,
    block_storage,
    call,
    client_failure,
    cloud_failure,
    dumps,
    image,
    loads,
    not_found_failure,
    phase,
    poll_delay,
    polled,
    ready_since,
    retrying,
    tagged,
    value,
    wait_ready,
)
from libs.resources.properties import PropSchema
from libs.resources.steps import Done, Failed, Observed, StepContext, StepResult
from libs.resources.volume_schema import (
    ATTRIBUTE_SOURCES,
    ATTRIBUTES,
    AVAILABILITY_ZONE,
    BACKUP_ID,
    DESCRIPTION,
    IMAGE,
    IMAGE_REF,
    METADATA,
    MULTI_ATTACH,
    NAME,
    PROPERTIES,
    READ_ONLY,
    SCHEDULER_HINTS,
    SIZE,
    SNAPSHOT_ID,
    SOURCE_VOLID,
    VOLUME_TYPE,
)
from libs.template.errors import StackValidationFailed

VOLUME_KEY: Final = "volume"
EXISTING: Final = "existing"
CREATED: Final = "created"
CREATING: Final = frozenset({"creating", "restoring-backup", "downloading"})



def get_volume(volume_id: str) -> CloudCall:
    return block_storage(VOLUME_KEY, "get_volume", volume_id)


class Volume(ResourceType):
    """A Cinder volume."""

    type_name: ClassVar[str] = "OS::Cinder::Volume"
    heat_class: ClassVar[str | None] = "CinderVolume"
    description: ClassVar[str] = (
        "A Cinder block storage volume: empty of a size, or made from an image, a snapshot, a "
        "backup or another volume. It grows, changes type and is renamed in place.")
    support_status: ClassVar[SupportStatus] = SupportStatus()
    properties_schema: ClassVar[Mapping[str, PropSchema]] = PROPERTIES
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = ATTRIBUTES
    has_check: ClassVar[bool] = True

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        if properties.get(IMAGE) and properties.get(IMAGE_REF):
            raise StackValidationFailed(f"Cannot define the following properties at the same time: "
                                        f"{IMAGE}, {IMAGE_REF}")
        if properties.get(BACKUP_ID):
            return
        sources = [p for p in (SNAPSHOT_ID, SOURCE_VOLID, IMAGE, IMAGE_REF) if properties.get(p)]
        no_size_ok = [p for p in (SNAPSHOT_ID, SOURCE_VOLID) if properties.get(p)]
        if properties.get(SIZE) is None and (len(no_size_ok) != 1 or len(sources) != 1):
            raise StackValidationFailed(
                f'If neither "{BACKUP_ID}" nor "{SIZE}" is provided, one and only one of '
                f'"{SOURCE_VOLID}", "{SNAPSHOT_ID}" must be specified, but currently specified '
                f'options: {no_size_ok}.')
        if properties.get(SIZE) and len(sources) > 1:
            raise StackValidationFailed(
                f'If "{SIZE}" is provided, only one of "{IMAGE}", "{IMAGE_REF}", "{SOURCE_VOLID}", '
                f'"{SNAPSHOT_ID}" can be specified, but currently specified options: {sources}.')

    def volume_name(self, ctx: StepContext) -> str:
        return ctx.properties.get(NAME) or self.physical_resource_name(ctx)

    def _lookups(self, ctx: StepContext, *, listed: bool) -> list[CloudCall]:
        name = self.volume_name(ctx)
        calls = [block_storage(EXISTING, "volumes", details=True, name=name)] if listed else []
        if ctx.properties.get(IMAGE):
            calls.append(image(IMAGE, "find_image", ctx.properties[IMAGE], ignore_missing=False))
        return calls

    # ---- create -------------------------------------------------------------------------------
    def start_create(self, ctx: StepContext) -> StepResult:
        listed = retrying(ctx)
        calls = self._lookups(ctx, listed=listed)
        if not calls:
            return self._create(ctx, None)
        return call("lookup", *calls, data={LISTED: "1" if listed else None})

    def _create(self, ctx: StepContext, image_id: str | None) -> StepResult:
        props = ctx.properties
        name = self.volume_name(ctx)
        if props.get(BACKUP_ID):
            return call("create", block_storage(CREATED, "restore_backup", props[BACKUP_ID], name=name))
        kwargs: dict[str, Any] = {"name": name, "description": props.get(DESCRIPTION) or
                                  self.physical_resource_name(ctx),
                                  "metadata": {**(props.get(METADATA) or {}), TAG_KEY: ctx.cloud_tag}}
        for prop, key in ((SIZE, "size"), (AVAILABILITY_ZONE, "availability_zone"),
                          (SNAPSHOT_ID, "snapshot_id"), (VOLUME_TYPE, "volume_type"),
                          (SOURCE_VOLID, "source_volume_id"), (SCHEDULER_HINTS, "scheduler_hints")):
            if props.get(prop) is not None:
                kwargs[key] = props[prop]
        if image_id or props.get(IMAGE_REF):
            kwargs["image_id"] = image_id or props[IMAGE_REF]
        if props.get(MULTI_ATTACH):
            kwargs["is_multiattach"] = True
        return call("create", block_storage(CREATED, "create_volume", **kwargs),
                    data={IMAGE: image_id})

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        step = phase(ctx)
        if action is Action.CREATE:
            return self._check_create(ctx, step)
        if action is Action.DELETE:
            return self._check_delete(ctx, step)
        if action is Action.UPDATE:
            return self._check_update(ctx, step)
        if action is Action.CHECK:
            return self._check_check(ctx)
        return Done()

    def _check_create(self, ctx: StepContext, step: str) -> StepResult:
        if step == "lookup":
            keys = [c.key for c in self._lookups(ctx, listed=bool(ctx.data.get(LISTED)))]
            if not all(k in ctx.answers for k in keys):
                return self.start_create(ctx)
            for key in keys:
                error = ctx.answers[key].error
                if error is not None and key == IMAGE and error.kind is ErrorKind.NOT_FOUND:
                    return not_found_failure("glance.image", ctx.properties[IMAGE], (IMAGE,))
                if error is not None:
                    return cloud_failure(error)
            found = tagged(value(ctx.answers.get(EXISTING)), ctx.cloud_tag)
            if found is not None:
                return call("build", get_volume(str(found["id"])), physical_id=str(found["id"]))
            image_answer = value(ctx.answers.get(IMAGE))
            return self._create(ctx, image_answer.get("id") if isinstance(image_answer, Mapping) else None)
        if step == "create":
            answer = ctx.answers.get(CREATED)
            if answer is None:
                # Lost: a volume may exist; the lookup looks for it before making another.
                return self.start_create(ctx)
            if answer.error is not None:
                return client_failure(Service.BLOCK_STORAGE, answer.error)
            made = answer.value or {}
            volume_id = str(made.get("volume_id") or made.get("id"))
            return call("build", get_volume(volume_id), delay=poll_delay(ctx), physical_id=volume_id,
                        data=ready_since(ctx))
        if step == "build":
            return self._wait_available(ctx)
        return self._finished(ctx)

    def _wait_available(self, ctx: StepContext) -> StepResult:
        volume = polled(ctx, VOLUME_KEY, "build", get_volume(str(ctx.physical_id)))
        if not isinstance(volume, Mapping):
            return volume
        status = volume.get("status")
        if status == "available" and ctx.properties.get(READ_ONLY) is not None:
            # Cinder takes the flag only once the volume is available (Heat sets it then too).
            return call("finish", block_storage("read_only", "set_volume_readonly", str(ctx.physical_id),
                                                readonly=bool(ctx.properties[READ_ONLY])),
                        get_volume(str(ctx.physical_id)))
        if status == "available":
            return self._finished(ctx)
        if status in CREATING:
            return wait_ready(ctx, "build", get_volume(str(ctx.physical_id)), what="Volume",
                              ready="available", status=str(status))
        if status == "error":
            return Failed('Went to status error due to "Unknown"', error="ResourceInError")
        return Failed(f'Volume create failed - Unknown status {status} due to "Unknown"',
                      error="ResourceUnknownStatus")

    def _finished(self, ctx: StepContext) -> StepResult:
        flagged = ctx.answers.get("read_only")
        if flagged is not None and flagged.error is not None:
            return cloud_failure(flagged.error)
        volume = value(ctx.answers.get(VOLUME_KEY))
        if not isinstance(volume, Mapping):
            return call("finish", get_volume(str(ctx.physical_id)))
        return Done(data={VOLUME_KEY: dumps(dict(volume)), "phase": None})

    # ---- delete -------------------------------------------------------------------------------
    def start_delete(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return call("delete-find", block_storage(EXISTING, "volumes", details=True,
                                                     name=self.volume_name(ctx)))
        return call("delete-look", get_volume(ctx.physical_id))

    def _check_delete(self, ctx: StepContext, step: str) -> StepResult:
        if step == "delete-find":
            answer = ctx.answers.get(EXISTING)
            if answer is None:
                return self.start_delete(ctx)
            if answer.error is not None:
                return cloud_failure(answer.error)
            found = tagged(answer.value, ctx.cloud_tag)
            if found is None:
                return Done(data={"phase": None})
            return call("delete-look", get_volume(str(found["id"])), physical_id=str(found["id"]))
        answer = ctx.answers.get(VOLUME_KEY) if step != "deleting" else ctx.answers.get("deleted")
        if answer is None:
            return call("delete-look", get_volume(str(ctx.physical_id)), delay=poll_delay(ctx))
        if answer.not_found:
            return Done(data={"phase": None})
        if answer.error is not None:
            return cloud_failure(answer.error)
        if step == "deleting":
            return call("gone", get_volume(str(ctx.physical_id)), delay=poll_delay(ctx))
        status = str(answer.value.get("status"))
        if step == "delete-look":
            if status == "in-use":
                return Failed("Volume in use", error="Error")
            if status != "deleting":
                return call("deleting", block_storage("deleted", "delete_volume", str(ctx.physical_id),
                                                      ignore_missing=True))
        if status.lower() == "error_deleting":
            return Failed('Went to status error_deleting due to "delete"', error="ResourceInError")
        return call("gone", get_volume(str(ctx.physical_id)), delay=poll_delay(ctx))

    # ---- update -------------------------------------------------------------------------------
    def start_update(self, ctx: StepContext) -> StepResult:
        old = ctx.old_properties or {}
        new = ctx.properties
        volume_id = str(ctx.physical_id)
        calls: list[CloudCall] = []
        if old.get(NAME) != new.get(NAME) or old.get(DESCRIPTION) != new.get(DESCRIPTION):
            calls.append(block_storage("rename", "update_volume", volume_id, name=self.volume_name(ctx),
                                       description=new.get(DESCRIPTION) or self.physical_resource_name(ctx)))
        if old.get(METADATA) != new.get(METADATA):
            meta = {**(new.get(METADATA) or {}), TAG_KEY: ctx.cloud_tag}
            calls.append(block_storage("metadata", "set_volume_metadata", volume_id, **meta))
            removed = sorted(set(old.get(METADATA) or {}) - set(meta))
            if removed:
                calls.append(block_storage("metadata_removed", "delete_volume_metadata", volume_id,
                                           keys=removed))
        if old.get(VOLUME_TYPE) != new.get(VOLUME_TYPE) and new.get(VOLUME_TYPE):
            calls.append(block_storage("retype", "retype_volume", volume_id, new[VOLUME_TYPE],
                                       migration_policy="never"))
        if old.get(READ_ONLY) != new.get(READ_ONLY) and new.get(READ_ONLY) is not None:
            calls.append(block_storage("read_only", "set_volume_readonly", volume_id,
                                       readonly=bool(new[READ_ONLY])))
        if old.get(BACKUP_ID) != new.get(BACKUP_ID) and new.get(BACKUP_ID):
            calls.append(block_storage("restore", "restore_backup", new[BACKUP_ID], volume=volume_id))
        old_size, new_size = old.get(SIZE), new.get(SIZE)
        if new_size is not None and old_size is not None and new_size < old_size:
            return Failed("Shrinking volume is not supported.", error="NotSupported")
        extend = new_size is not None and old_size is not None and new_size > old_size
        if extend:
            calls.append(block_storage("extend", "extend_volume", volume_id, new_size))
        if not calls:
            return call("finish", get_volume(volume_id))
        return call("updating", *calls, data={"extend": "1" if extend else None,
                                              "update_keys": dumps([c.key for c in calls])})

    def _check_update(self, ctx: StepContext, step: str) -> StepResult:
        if step == "updating":
            keys = loads(ctx.data, "update_keys", [])
            if not all(k in ctx.answers for k in keys):
                return self.start_update(ctx)  # lost answers: these calls may be made again
            for key in keys:
                error = ctx.answers[key].error
                if error is not None:
                    if key == "extend":
                        return Failed(f"Failed to extend volume {ctx.physical_id} - {error.message}",
                                      error="Error")
                    return cloud_failure(error)
            return call("extending", get_volume(str(ctx.physical_id)), delay=poll_delay(ctx))
        if step == "extending":
            volume = polled(ctx, VOLUME_KEY, "extending", get_volume(str(ctx.physical_id)))
            if not isinstance(volume, Mapping):
                return volume
            status = volume.get("status")
            if status in ("extending", "retyping", "restoring-backup"):
                return call("extending", get_volume(str(ctx.physical_id)), delay=poll_delay(ctx))
            if status not in ("available", "in-use"):
                return Failed(f'Volume resize failed - Unknown status {status} due to "Unknown"',
                              error="ResourceUnknownStatus")
            return Done(data={VOLUME_KEY: dumps(dict(volume)), "phase": None, "extend": None,
                              "update_keys": None})
        return self._finished(ctx)

    # ---- check and observe ----------------------------------------------------------------------
    def start_check(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Failed("Resource not created")
        return call("check", get_volume(ctx.physical_id))

    def _check_check(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(VOLUME_KEY)
        if answer is None:
            return self.start_check(ctx)
        if answer.error is not None:
            return cloud_failure(answer.error)
        status = answer.value.get("status")
        if status not in ("available", "in-use"):
            return Failed(f"'status': expected '['available', 'in-use']', got '{status}'", error="Error")
        return Done(data={VOLUME_KEY: dumps(dict(answer.value)), "phase": None})

    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        return block_storage(OBSERVE_KEY, "get_volume", ctx.physical_id) if ctx.physical_id else None

    def observe(self, ctx: StepContext) -> Observed | None:
        answer = ctx.answers.get(OBSERVE_KEY)
        if answer is None or (answer.error is not None and not answer.not_found):
            return None
        return self.observe_listed(ctx, None if answer.not_found else answer.value)

    def list_call(self) -> CloudCall | None:
        return block_storage("volumes", "volumes", details=True)

    def observe_listed(self, ctx: StepContext, listed: Mapping[str, Any] | None) -> Observed | None:
        if listed is None or listed.get("status") in ("deleting", "error_deleting"):
            return Observed(gone=True)
        metadata = {k: v for k, v in (listed.get("metadata") or {}).items() if k not in (TAG_KEY, "readonly")}
        live: dict[str, Any] = {SIZE: listed.get("size")}
        if metadata != (ctx.properties.get(METADATA) or {}):
            live[METADATA] = metadata
        if ctx.properties.get(NAME) is not None:
            live[NAME] = listed.get("name")
        if ctx.properties.get(DESCRIPTION) is not None:
            live[DESCRIPTION] = listed.get("description")
        error = f"Volume in status {listed.get('status')}" if listed.get("status") == "error" else None
        return Observed(properties=live, error=error)

    # ---- attributes ---------------------------------------------------------------------------
    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if physical_id is None:
            return None
        volume = loads(data, VOLUME_KEY, {})
        metadata = {k: v for k, v in (volume.get("metadata") or {}).items() if k != TAG_KEY}
        if name == "metadata":
            return json.dumps(metadata)
        if name == "metadata_values":
            return metadata
        if name == "attachments_list":
            return list(volume.get("attachments") or [])
        if name == "attachments":
            return str(list(volume.get("attachments") or []))
        if name == "multiattach":
            return bool(volume.get("is_multiattach"))
        if name == "bootable":
            return "true" if volume.get("is_bootable") else "false"
        return str(volume.get(ATTRIBUTE_SOURCES.get(name, name)))

    def show(self, physical_id: str, data: Mapping[str, str]) -> Any:
        return loads(data, VOLUME_KEY)
