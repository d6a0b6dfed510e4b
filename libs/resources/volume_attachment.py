"""``OS::Cinder::VolumeAttachment``: a volume attached to a server, through Nova, watched through Cinder.

Create: Cinder is asked first whether the volume is already attached to the server
(a crash may have lost the answer of an attach already made); if not, Nova attaches
it, and Cinder is asked until the volume is ``in-use``. Delete: Nova detaches it, then
Cinder is asked until the server is no longer among the volume's attachments, then
Nova until it no longer lists the attachment (with no id, an attach whose answer was
lost may still have been made: Cinder is asked first whether the volume is on the server).
Any property change detaches the volume and attaches the new one (Heat updates it in place
that way too).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, ErrorKind
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY, ResourceType, SupportStatus
from libs.resources.cloud_steps import (
    block_storage,
    call,
    client_text,
    cloud_failure,
    compute,
    phase,
    poll_delay,
    polled,
)
from libs.resources.properties import PropSchema
from libs.resources.steps import Done, Failed, Observed, StepContext, StepResult
from libs.template.constraints import CustomConstraint

INSTANCE = "instance_uuid"
VOLUME = "volume_id"
DEVICE = "mountpoint"

VOLUME_KEY: Final = "volume"

PROPERTIES: Final[Mapping[str, PropSchema]] = {
    INSTANCE: PropSchema("string", "The server (id) to attach the volume to.", required=True,
                         update_allowed=True),
    VOLUME: PropSchema("string", "The volume (id) to attach.", required=True, update_allowed=True,
                       constraints=(CustomConstraint("cinder.volume"),)),
    DEVICE: PropSchema("string", "Where the volume shows in the server (/dev/vdb); the cloud may "
                       "choose another.", update_allowed=True),
}


def _attached_to(volume: Mapping[str, Any], server_id: str) -> bool:
    return any(a.get("server_id") == server_id for a in volume.get("attachments") or ())


class VolumeAttachment(ResourceType):
    """A Cinder volume attached to a Nova server."""

    type_name: ClassVar[str] = "OS::Cinder::VolumeAttachment"
    heat_class: ClassVar[str | None] = "CinderVolumeAttachment"
    description: ClassVar[str] = (
        "Attaches a Cinder volume to a Nova server, at a device the template may name.")
    support_status: ClassVar[SupportStatus] = SupportStatus()
    properties_schema: ClassVar[Mapping[str, PropSchema]] = PROPERTIES

    # ---- attach -------------------------------------------------------------------------------
    def start_create(self, ctx: StepContext) -> StepResult:
        return call("look", block_storage(VOLUME_KEY, "get_volume", ctx.properties[VOLUME]))

    def _attach(self, props: Mapping[str, Any], delay: float = 0.0) -> StepResult:
        kwargs: dict[str, Any] = {"volume": props[VOLUME]}
        if props.get(DEVICE):
            kwargs["device"] = props[DEVICE]
        return call("attach", compute("attach", "create_volume_attachment", props[INSTANCE], **kwargs),
                    delay=delay)

    def _check_attach(self, ctx: StepContext, step: str) -> StepResult:
        props = ctx.properties
        volume_id, server_id = str(props[VOLUME]), str(props[INSTANCE])
        get = block_storage(VOLUME_KEY, "get_volume", volume_id)
        if step == "look":
            answer = ctx.answers.get(VOLUME_KEY)
            if answer is None:
                return call("look", get)
            if answer.error is not None:
                return cloud_failure(answer.error)
            if _attached_to(answer.value, server_id):
                return call("attaching", get, physical_id=volume_id)  # attached before a crash: adopt
            return self._attach(props)
        if step == "attach":
            answer = ctx.answers.get("attach")
            if answer is None:
                return call("look", get)  # lost: was it attached?
            if answer.error is not None and answer.error.kind is ErrorKind.CONFLICT:
                return self._attach(props, delay=poll_delay(ctx))  # Heat tries again on a conflict
            if answer.error is not None:
                return Failed(f"Failed to attach volume {volume_id} to server {server_id} - "
                              f"{client_text(answer.error)}", error="Error")
            attachment_id = str((answer.value or {}).get("id") or volume_id)
            return call("attaching", get, delay=poll_delay(ctx), physical_id=attachment_id)
        volume = polled(ctx, VOLUME_KEY, "attaching", get)
        if not isinstance(volume, Mapping):
            return volume
        status = volume.get("status")
        if status in ("available", "attaching", "reserved"):
            return call("attaching", get, delay=poll_delay(ctx))
        if status != "in-use":
            return Failed(f'Volume attachment failed - Unknown status {status} due to "Unknown"',
                          error="ResourceUnknownStatus")
        return Done(data={"phase": None})

    # ---- detach -------------------------------------------------------------------------------
    def _detach(self, props: Mapping[str, Any], delay: float = 0.0, prefix: str = "") -> StepResult:
        return call(prefix + "detach", compute("detach", "delete_volume_attachment", props[INSTANCE],
                                               props[VOLUME], ignore_missing=True), delay=delay)

    def start_delete(self, ctx: StepContext) -> StepResult:
        props = ctx.properties
        if ctx.physical_id:
            return self._detach(props)
        if not props.get(VOLUME) or not props.get(INSTANCE):
            return Done()
        # No id: an attach may still have been made, its answer lost (a crash, or a create cut
        # short by a newer traversal): Cinder says whether the volume is on the server.
        return call("unknown", block_storage(VOLUME_KEY, "get_volume", props[VOLUME]))

    def _check_unknown(self, ctx: StepContext) -> StepResult:
        """A delete with no id: detach the volume if an attach lost to a crash was made, else done."""
        props = ctx.properties
        answer = ctx.answers.get(VOLUME_KEY)
        if answer is None:
            return self.start_delete(ctx)
        if answer.not_found:
            return Done(data={"phase": None})
        if answer.error is not None:
            return cloud_failure(answer.error)
        if answer.value.get("status") in ("attaching", "reserved"):
            return call("unknown", block_storage(VOLUME_KEY, "get_volume", props[VOLUME]),
                        delay=poll_delay(ctx))
        if _attached_to(answer.value, str(props[INSTANCE])):
            return self._detach(props)
        return Done(data={"phase": None})

    def _check_detach(self, ctx: StepContext, step: str, props: Mapping[str, Any], prefix: str
                      ) -> StepResult | None:
        """The detach's next step, or None once the volume is detached."""
        volume_id, server_id = str(props[VOLUME]), str(props[INSTANCE])
        get = block_storage(VOLUME_KEY, "get_volume", volume_id)
        nova_get = compute("nova", "get_volume_attachment", server_id, volume_id)
        if step == prefix + "detach":
            answer = ctx.answers.get("detach")
            if answer is None:
                return self._detach(props, prefix=prefix)
            if answer.error is not None and answer.error.kind is ErrorKind.CONFLICT:
                return self._detach(props, delay=poll_delay(ctx), prefix=prefix)
            gone = (ErrorKind.NOT_FOUND, ErrorKind.BAD_REQUEST)
            if answer.error is not None and answer.error.kind not in gone:
                return Failed(f"Could not detach attachment {ctx.physical_id} from server {server_id}.",
                              error="Error")
            return call(prefix + "detaching", get, delay=poll_delay(ctx))
        if step == prefix + "detaching":
            answer = ctx.answers.get(VOLUME_KEY)
            if answer is None:
                return call(prefix + "detaching", get, delay=poll_delay(ctx))
            if answer.not_found or not _attached_to(answer.value or {}, server_id):
                return call(prefix + "nova", nova_get)
            if answer.error is not None:
                return cloud_failure(answer.error)
            status = answer.value.get("status")
            if status in ("in-use", "detaching", "reserved"):
                return call(prefix + "detaching", get, delay=poll_delay(ctx))
            if status not in ("available", "deleting"):
                return Failed(f'Volume detachment failed - Unknown status {status} due to "Unknown"',
                              error="ResourceUnknownStatus")
            return call(prefix + "nova", nova_get)
        answer = ctx.answers.get("nova")
        if answer is not None and answer.not_found:
            return None  # Nova no longer lists it: detached
        if answer is not None and answer.error is not None:
            return cloud_failure(answer.error)
        return call(prefix + "nova", nova_get, delay=poll_delay(ctx))

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        step = phase(ctx)
        if action is Action.CREATE:
            return self._check_attach(ctx, step)
        if action is Action.DELETE and step == "unknown":
            return self._check_unknown(ctx)
        if action is Action.DELETE:
            return self._check_detach(ctx, step, ctx.properties, "") or Done(data={"phase": None})
        if action is Action.UPDATE:
            if step.startswith("u-"):
                detaching = self._check_detach(ctx, step, ctx.old_properties or ctx.properties, "u-")
                return detaching or self.start_create(ctx)
            return self._check_attach(ctx, step)
        return Done()

    def start_update(self, ctx: StepContext) -> StepResult:
        # Heat detaches first, then attaches what the new properties say.
        return self._detach(ctx.old_properties or ctx.properties, prefix="u-")

    def replace_for_changes(self, changed: set[str], old_properties: Mapping[str, Any],
                            new_properties: Mapping[str, Any]) -> bool:
        return False

    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        if not ctx.physical_id:
            return None
        return compute(OBSERVE_KEY, "get_volume_attachment", ctx.properties[INSTANCE], ctx.properties[VOLUME])

    def observe(self, ctx: StepContext) -> Observed | None:
        answer = ctx.answers.get(OBSERVE_KEY)
        if answer is None or (answer.error is not None and not answer.not_found):
            return None
        return Observed(gone=answer.not_found)
