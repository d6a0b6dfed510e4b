"""OS::Cinder::Volume and OS::Cinder::VolumeAttachment as steps: answers in, step results out."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from libs.cloud.calls import Answer, ErrorKind
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY
from libs.resources.steps import Call, Done, Failed
from libs.template.errors import StackValidationFailed
from tests.unit.resources.cloud_support import (
    NOT_FOUND,
    TAG,
    after,
    call_of,
    ctx_for,
    error,
    methods,
    ok,
    run,
)
from tests.unit.resources.resource_support import plugin

VOLUME = plugin("OS::Cinder::Volume")
ATTACHMENT = plugin("OS::Cinder::VolumeAttachment")
PROPS = VOLUME.validate({"size": 1, "metadata": {"k": "v"}}, resource_name="vol")
AVAILABLE = {"id": "v1", "name": "st-r1-abcdefghijkl", "status": "available", "size": 1,
             "metadata": {"k": "v", "ember_resource": TAG}, "attachments": [], "is_bootable": False,
             "is_encrypted": False, "volume_type": "lvmdriver-1", "availability_zone": "nova"}


def _vol(status: str, **extra: Any) -> dict[str, Any]:
    return {**AVAILABLE, "status": status, **extra}


def test_create_waits_until_available() -> None:
    results, final = run(VOLUME, Action.CREATE, ctx_for(PROPS), [
        {"created": ok({"id": "v1"})}, {"volume": ok(_vol("creating"))}, {"volume": ok(AVAILABLE)}])
    assert call_of(results[0], "create_volume").kwargs == {
        "name": "st-r1-abcdefghijkl", "description": "st-r1-abcdefghijkl", "size": 1,
        "metadata": {"k": "v", "ember_resource": TAG}}
    assert isinstance(results[1], Call) and results[1].physical_id == "v1"
    assert isinstance(results[-1], Done)
    data = final.data
    assert VOLUME.attribute("size", "v1", data, PROPS) == "1"
    assert VOLUME.attribute("status", "v1", data, PROPS) == "available"
    assert VOLUME.attribute("metadata_values", "v1", data, PROPS) == {"k": "v"}
    assert VOLUME.attribute("metadata", "v1", data, PROPS) == '{"k": "v"}'
    assert VOLUME.attribute("bootable", "v1", data, PROPS) == "false"
    assert VOLUME.attribute("attachments_list", "v1", data, PROPS) == []
    assert VOLUME.attribute("display_name", "v1", data, PROPS) == "st-r1-abcdefghijkl"


@pytest.mark.parametrize(("status", "reason"), [
    ("error", 'ResourceInError: resources.vol: Went to status error due to "Unknown"'),
    ("weird", 'ResourceUnknownStatus: resources.vol: Volume create failed - Unknown status weird '
              'due to "Unknown"'),
])
def test_create_failures(status: str, reason: str) -> None:
    results, _ = run(VOLUME, Action.CREATE, ctx_for(PROPS), [
        {"created": ok({"id": "v1"})}, {"volume": ok(_vol(status))}])
    assert isinstance(results[-1], Failed) and results[-1].status_reason("resources", "vol") == reason


@pytest.mark.parametrize(("ready_timeout", "failed"), [(None, False), (2.5, False), (1.5, True)])
def test_a_volume_not_available_within_the_ready_timeout_is_in_error(ready_timeout: float | None,
                                                                     failed: bool) -> None:
    creating = {"volume": ok(_vol("creating"))}
    # Asked for at the first second, still creating 1 and 2 s later.
    results, _ = run(VOLUME, Action.CREATE, dataclasses.replace(ctx_for(PROPS), ready_timeout=ready_timeout),
                     [{"created": ok({"id": "v1"})}, creating, creating])
    if failed:
        assert isinstance(results[-1], Failed) and results[-1].status_reason("resources", "vol") == (
            "ResourceInError: resources.vol: Volume did not become available within 1.5s (still creating)")
    else:
        assert methods(results[-1]) == ["get_volume"]


def test_lost_create_adopts_the_tagged_volume() -> None:
    results, final = run(VOLUME, Action.CREATE, ctx_for(PROPS), [
        None, {"existing": ok([{"id": "v7", "metadata": {"ember_resource": TAG}}])}])
    assert methods(results[1]) == ["volumes"]
    assert methods(results[2]) == ["get_volume"] and final.physical_id == "v7"
    assert sum(methods(r).count("create_volume") for r in results if isinstance(r, Call)) == 1


def test_quota_refusal_fails_with_the_clouds_message() -> None:
    # As Heat's cinderclient prints it (measured: clouds/create_failed).
    bad = error(ErrorKind.BAD_REQUEST, "Invalid input received: size 0", 400, "BadRequestException")
    results, _ = run(VOLUME, Action.CREATE, ctx_for(PROPS), [{"created": bad}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "vol") == (
        "BadRequest: resources.vol: Invalid input received: size 0 (HTTP 400)")
    quota = error(ErrorKind.QUOTA, "VolumeSizeExceedsAvailableQuota: Requested 9G", 413, "HttpException")
    assert quota.error is not None
    over = Answer(error=dataclasses.replace(quota.error, request_id="req-7"))
    results, _ = run(VOLUME, Action.CREATE, ctx_for(PROPS), [{"created": over}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "vol") == (
        "OverLimit: resources.vol: VolumeSizeExceedsAvailableQuota: Requested 9G (HTTP 413) "
        "(Request-ID: req-7)")


@pytest.mark.parametrize(("script", "last"), [
    ([{"volume": ok(AVAILABLE)}, {"deleted": ok()}, {"volume": ok(_vol("deleting"))}, {"volume": NOT_FOUND}],
     Done),
    ([{"volume": NOT_FOUND}], Done),
    ([{"volume": ok(_vol("deleting"))}, {"volume": NOT_FOUND}], Done),
    ([{"volume": ok(_vol("in-use"))}], Failed),
    ([{"volume": ok(AVAILABLE)}, {"deleted": ok()}, {"volume": ok(_vol("error_deleting"))}], Failed),
])
def test_delete(script: list[Any], last: type) -> None:
    results, _ = run(VOLUME, Action.DELETE, ctx_for(PROPS, physical_id="v1"), script)
    assert methods(results[0]) == ["get_volume"]
    assert isinstance(results[-1], last)
    failed = results[-1]
    if isinstance(failed, Failed) and script[0]["volume"].value["status"] == "in-use":
        assert failed.status_reason("resources", "vol") == "Error: resources.vol: Volume in use"


def test_update_in_place() -> None:
    new = VOLUME.validate({"size": 2, "name": "data", "metadata": {"x": "y"}, "volume_type": "fast"},
                          resource_name="vol")
    assert not VOLUME.needs_replace(PROPS, new)
    ctx = after(ctx_for(new, old_properties=PROPS, physical_id="v1"), Done(), elapsed=0)
    results, _ = run(VOLUME, Action.UPDATE, ctx, [
        {"rename": ok(), "metadata": ok(), "metadata_removed": ok(), "retype": ok(), "extend": ok()},
        {"volume": ok(_vol("extending"))}, {"volume": ok(_vol("available", size=2))}])
    assert methods(results[0]) == ["update_volume", "set_volume_metadata", "delete_volume_metadata",
                                   "retype_volume", "extend_volume"]
    assert call_of(results[0], "extend_volume").args == ("v1", 2)
    assert isinstance(results[-1], Done)
    smaller = VOLUME.validate({"size": 1}, resource_name="vol")
    shrink = VOLUME.start(Action.UPDATE, ctx_for(smaller, old_properties=new, physical_id="v1"))
    assert isinstance(shrink, Failed) and shrink.message == "Shrinking volume is not supported."


@pytest.mark.parametrize(("changes", "replace"), [
    ({"size": 3}, False), ({"name": "n"}, False), ({"volume_type": "t"}, False), ({"read_only": True}, False),
    ({"availability_zone": "az2"}, True), ({"image": "cirros"}, True), ({"snapshot_id": "s"}, True),
])
def test_volume_replace_rules(changes: dict[str, Any], replace: bool) -> None:
    new = VOLUME.validate({"size": 1, "metadata": {"k": "v"}, **changes}, resource_name="vol")
    assert VOLUME.needs_replace(PROPS, new) is replace


def test_volume_validation() -> None:
    with pytest.raises(StackValidationFailed, match='If neither "backup_id" nor "size" is provided'):
        VOLUME.validate({}, resource_name="vol")
    VOLUME.validate({"snapshot_id": "s1"}, resource_name="vol")


def test_volume_observe() -> None:
    ctx = ctx_for(PROPS, physical_id="v1")
    assert VOLUME.observe_call(ctx) is not None
    seen = VOLUME.observe(after(ctx, Done(), {OBSERVE_KEY: ok(_vol("available", size=5))}))
    assert seen is not None and seen.properties == {"size": 5}
    gone = VOLUME.observe(after(ctx, Done(), {OBSERVE_KEY: NOT_FOUND}))
    assert gone is not None and gone.gone


# ---- attachments ----------------------------------------------------------------------------------

ATT = ATTACHMENT.validate({"instance_uuid": "s1", "volume_id": "v1", "mountpoint": "/dev/vdb"},
                          resource_name="att")
IN_USE = _vol("in-use", attachments=[{"server_id": "s1", "attachment_id": "a1", "device": "/dev/vdb"}])


def test_attach_waits_until_in_use() -> None:
    results, final = run(ATTACHMENT, Action.CREATE, ctx_for(ATT), [
        {"volume": ok(AVAILABLE)}, {"attach": ok({"id": "v1", "device": "/dev/vdb"})},
        {"volume": ok(_vol("attaching"))}, {"volume": ok(IN_USE)}])
    assert call_of(results[1], "create_volume_attachment").args == ("s1",)
    assert call_of(results[1], "create_volume_attachment").kwargs == {"volume": "v1", "device": "/dev/vdb"}
    assert isinstance(results[-1], Done) and final.physical_id == "v1"


def test_attach_lost_answer_adopts_the_attachment() -> None:
    results, final = run(ATTACHMENT, Action.CREATE, ctx_for(ATT), [
        {"volume": ok(AVAILABLE)}, None, {"volume": ok(IN_USE)}, {"volume": ok(IN_USE)}])
    assert methods(results[2]) == ["get_volume"]
    assert sum(methods(r).count("create_volume_attachment") for r in results if isinstance(r, Call)) == 1
    assert isinstance(results[-1], Done) and final.physical_id == "v1"


def test_attach_refused() -> None:
    bad = error(ErrorKind.BAD_REQUEST, "Invalid volume", 400, "BadRequestException")
    results, _ = run(ATTACHMENT, Action.CREATE, ctx_for(ATT), [{"volume": ok(AVAILABLE)}, {"attach": bad}])
    assert isinstance(results[-1], Failed)
    assert results[-1].message == "Failed to attach volume v1 to server s1 - Invalid volume (HTTP 400)"


def test_detach_waits_for_cinder_then_nova() -> None:
    results, _ = run(ATTACHMENT, Action.DELETE, ctx_for(ATT, physical_id="v1"), [
        {"detach": ok()}, {"volume": ok(_vol("detaching", attachments=IN_USE["attachments"]))},
        {"volume": ok(AVAILABLE)}, {"nova": ok({"id": "v1"})}, {"nova": NOT_FOUND}])
    assert methods(results[0]) == ["delete_volume_attachment"]
    assert methods(results[3]) == ["get_volume_attachment"]
    assert isinstance(results[-1], Done)


@pytest.mark.parametrize(("script", "detached"), [
    # Never attached (the create was cut short before its attach): nothing to undo.
    ([{"volume": ok(AVAILABLE)}], False),
    ([{"volume": NOT_FOUND}], False),
    # Attached by a call whose answer was lost: detached as with an id.
    ([{"volume": ok(IN_USE)}, {"detach": ok()}, {"volume": ok(AVAILABLE)}, {"nova": NOT_FOUND}], True),
    ([{"volume": ok(_vol("attaching"))}, {"volume": ok(IN_USE)}, {"detach": ok()}, {"volume": ok(AVAILABLE)},
      {"nova": NOT_FOUND}], True),
])
def test_delete_without_an_id_detaches_what_a_lost_attach_made(script: list[Any], detached: bool) -> None:
    results, _ = run(ATTACHMENT, Action.DELETE, ctx_for(ATT), script)
    assert methods(results[0]) == ["get_volume"]
    asked = [m for r in results if isinstance(r, Call) for m in methods(r)]
    assert ("delete_volume_attachment" in asked) is detached
    assert isinstance(results[-1], Done)


def test_attachment_update_detaches_then_attaches() -> None:
    new = ATTACHMENT.validate({"instance_uuid": "s2", "volume_id": "v1"}, resource_name="att")
    assert not ATTACHMENT.needs_replace(ATT, new)
    ctx = after(ctx_for(new, old_properties=ATT, physical_id="v1"), Done(), elapsed=0)
    results, _ = run(ATTACHMENT, Action.UPDATE, ctx, [
        {"detach": ok()}, {"volume": ok(AVAILABLE)}, {"nova": NOT_FOUND}, {"volume": ok(AVAILABLE)},
        {"attach": ok({"id": "v1"})}, {"volume": ok(_vol("in-use", attachments=[{"server_id": "s2"}]))}])
    assert call_of(results[0], "delete_volume_attachment").args == ("s1", "v1")
    assert call_of(results[4], "create_volume_attachment").args == ("s2",)
    assert isinstance(results[-1], Done)


def test_attachment_observe() -> None:
    ctx = ctx_for(ATT, physical_id="v1")
    asked = ATTACHMENT.observe_call(ctx)
    assert asked is not None and asked.method == "get_volume_attachment" and asked.args == ("s1", "v1")
    gone = ATTACHMENT.observe(after(ctx, Done(), {OBSERVE_KEY: NOT_FOUND}))
    assert gone is not None and gone.gone


def test_read_only_is_set_once_available() -> None:
    props = VOLUME.validate({"size": 1, "read_only": True}, resource_name="vol")
    results, _ = run(VOLUME, Action.CREATE, ctx_for(props), [
        {"created": ok({"id": "v1"})}, {"volume": ok(AVAILABLE)},
        {"read_only": ok(), "volume": ok(AVAILABLE)}])
    assert call_of(results[2], "set_volume_readonly").kwargs == {"readonly": True}
    assert isinstance(results[-1], Done)
