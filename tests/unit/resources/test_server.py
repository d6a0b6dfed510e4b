"""OS::Nova::Server as steps: contexts and scripted answers in, step results out."""

from __future__ import annotations

import base64
import dataclasses
import email
import json
from typing import Any

import pytest

from libs.cloud.calls import Answer, ErrorKind
from libs.engine.status import Action
from libs.resources import stack_user
from libs.resources.base import OBSERVE_KEY
from libs.resources.steps import Call, Done, Failed, Wait
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

SERVER = plugin("OS::Nova::Server")
PROPS = SERVER.validate({"flavor": "m1.small", "image": "cirros", "networks": [{"network": "private"}],
                         "user_data": "#!/bin/sh\necho hi", "user_data_format": "RAW",
                         "metadata": {"role": "web", "n": 1}}, resource_name="r1")
LOOKUPS = {"flavor": ok({"id": "f2", "name": "m1.small"}), "image": ok({"id": "img1", "name": "cirros"}),
           "net0": ok({"id": "net-private", "name": "private"}), "existing": ok([])}
ADDRESSES = {"private": [{"addr": "10.0.0.5", "version": 4, "OS-EXT-IPS:type": "fixed",
                          "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01"}]}
ACTIVE = {"id": "s1", "name": "st-r1-abcdefghijkl", "status": "ACTIVE", "addresses": ADDRESSES,
          "instance_name": "instance-00000001", "access_ipv4": "", "access_ipv6": "", "tags": [],
          "metadata": {"role": "web", "n": "1", "ember_resource": TAG},
          "flavor": {"original_name": "m1.small"}, "image": {"id": "img1"}, "admin_password": "secret"}
PORTS = [{"id": "p1", "network_id": "net-private", "mac_address": "fa:16:3e:00:00:01",
          "fixed_ips": [{"subnet_id": "sub1", "ip_address": "10.0.0.5"}]}]


def _server(status: str, **extra: Any) -> dict[str, Any]:
    return {**ACTIVE, "status": status, **extra}


@pytest.mark.parametrize(("ready_timeout", "failed"), [(None, False), (3.5, False), (2.5, True)])
def test_a_server_not_active_within_the_ready_timeout_is_in_error(ready_timeout: float | None,
                                                                  failed: bool) -> None:
    ctx = dataclasses.replace(ctx_for(PROPS), ready_timeout=ready_timeout)
    building = {"server": ok(_server("BUILD"))}
    # One second a step: asked for at the second, still BUILD 1, 2 and 3 s later.
    results, _ = run(SERVER, Action.CREATE, ctx, [LOOKUPS, {"created": ok({"id": "s1"})}, building,
                                                  building, building])
    if failed:
        assert results[-1] == Failed("Server did not become ACTIVE within 2.5s (still BUILD)",
                                     error="ResourceInError")  # which action_retry_limit makes again
    else:
        assert methods(results[-1]) == ["get_server"]


def test_the_ready_timeout_of_a_server_adopted_after_a_lost_answer_counts_from_its_first_sight() -> None:
    building = {"server": ok(_server("BUILD"))}
    ctx = dataclasses.replace(ctx_for(PROPS, data={"phase": "build"}, physical_id="s1"), ready_timeout=1.5,
                              answers=building, now=10_000.0, started_at=0.0)
    first = SERVER.check(Action.CREATE, ctx)  # long after the action began: counted from now
    assert methods(first) == ["get_server"]
    later = after(ctx, first, building)
    second = SERVER.check(Action.CREATE, later)
    assert methods(second) == ["get_server"]
    assert isinstance(SERVER.check(Action.CREATE, after(later, second, building)), Failed)


def test_create_boots_through_build_to_active() -> None:
    ctx = ctx_for(PROPS)
    results, final = run(SERVER, Action.CREATE, ctx, [
        LOOKUPS, {"created": ok({"id": "s1"})}, {"server": ok(_server("BUILD"))},
        {"server": ok(_server("ACTIVE"))}, {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    # A fresh create looks nothing up by tag: a lost create answer is seen, and looked for, later.
    assert methods(results[0]) == ["find_flavor", "find_image", "find_network"]
    again = SERVER.start(Action.CREATE, ctx_for(PROPS, data={"phase": "build"}))
    assert methods(again) == ["find_flavor", "find_image", "find_network", "servers"]
    assert call_of(again, "servers").kwargs == {"details": True, "name": "st-r1-abcdefghijkl"}
    create = call_of(results[1], "create_server").kwargs
    assert create == {
        "name": "st-r1-abcdefghijkl", "flavor_id": "f2", "image_id": "img1",
        "networks": [{"uuid": "net-private"}],
        "metadata": {"role": "web", "n": "1", "ember_resource": TAG},
        "user_data": base64.b64encode(b"#!/bin/sh\necho hi").decode()}
    assert isinstance(results[2], Call) and results[2].physical_id == "s1"
    assert methods(results[2]) == ["get_server"] and methods(results[3]) == ["get_server"]
    assert methods(results[4]) == ["get_server", "ports"]
    assert isinstance(results[5], Done)
    assert "secret" not in str(results[5].data["server"])
    assert final.physical_id == "s1"
    data = final.data
    assert SERVER.attribute("first_address", "s1", data, PROPS) == "10.0.0.5"
    assert SERVER.attribute("networks", "s1", data, PROPS) == {"private": ["10.0.0.5"],
                                                               "net-private": ["10.0.0.5"]}
    addresses = SERVER.attribute("addresses", "s1", data, PROPS)
    assert addresses["private"][0]["port"] == "p1" and addresses["net-private"] == addresses["private"]
    assert SERVER.attribute("name", "s1", data, PROPS) == "st-r1-abcdefghijkl"
    assert SERVER.attribute("instance_name", "s1", data, PROPS) == "instance-00000001"
    assert SERVER.attribute("show", "s1", data, PROPS)["status"] == "ACTIVE"
    assert SERVER.attribute("first_address", None, {}, PROPS) is None


def test_error_with_fault_fails_with_heats_reason() -> None:
    fault = {"message": "No valid host was found. ", "code": 500}
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [
        LOOKUPS, {"created": ok({"id": "s1"})}, {"server": ok(_server("ERROR", fault=fault))}])
    failed = results[-1]
    assert isinstance(failed, Failed)
    assert failed.status_reason("resources", "r1") == (
        'ResourceInError: resources.r1: Went to status ERROR due to '
        '"Message: No valid host was found. , Code: 500"')


@pytest.mark.parametrize(("answers", "reason"), [
    ({**LOOKUPS, "flavor": NOT_FOUND},
     "Property error: resources.r1.properties.flavor: Error validating value 'm1.small': "
     "No Flavor matching {'name': 'm1.small'}. (HTTP 404)"),
    ({**LOOKUPS, "net0": NOT_FOUND},
     "Property error: resources.r1.properties.networks[0].network: Error validating value 'private': "
     "Unable to find network with name or id 'private'"),
    ({**LOOKUPS, "image": error(ErrorKind.FORBIDDEN, "Policy forbids it", 403, "ForbiddenException")},
     "ForbiddenException: resources.r1: Policy forbids it"),
])
def test_lookup_failures(answers: dict[str, Any], reason: str) -> None:
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [answers])
    assert isinstance(results[-1], Failed) and results[-1].status_reason("resources", "r1") == reason


def test_create_refused_fails_with_the_clouds_message() -> None:
    # As Heat's novaclient prints it (measured: clouds/create_failed).
    bad = error(ErrorKind.BAD_REQUEST, "Invalid key_name provided.", 400, "BadRequestException")
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [LOOKUPS, {"created": bad}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "r1") == (
        "BadRequest: resources.r1: Invalid key_name provided. (HTTP 400)")
    assert bad.error is not None
    named = Answer(error=dataclasses.replace(bad.error, request_id="req-1"))
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [LOOKUPS, {"created": named}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "r1") == (
        "BadRequest: resources.r1: Invalid key_name provided. (HTTP 400) (Request-ID: req-1)")


TAGGED = {"id": "s9", "status": "BUILD", "metadata": {"ember_resource": TAG}}
OTHER = {"id": "s8", "status": "ACTIVE", "metadata": {"ember_resource": "ember-someone-else"}}


@pytest.mark.parametrize(("data", "script", "adopted"), [
    # The create's answer was lost in a crash: look by tag, find it, adopt it.
    ({}, [LOOKUPS, None, {"existing": ok([OTHER, TAGGED])}], "s9"),
    # Nothing was made after all: create now.
    ({}, [LOOKUPS, None, {"existing": ok([OTHER])}], None),
    # A create started again on the same resource finds the server in its first listing.
    ({"phase": "create"}, [{**LOOKUPS, "existing": ok([TAGGED])}], "s9"),
    # The lookups' answers were lost: asked again, nothing made.
    ({}, [None], None),
])
def test_adopt_after_crash(data: dict[str, str], script: list[Any], adopted: str | None) -> None:
    results, final = run(SERVER, Action.CREATE, ctx_for(PROPS, data=data), script)
    if adopted is None:
        assert "get_server" not in methods(results[-1])
        return
    assert methods(results[-1]) == ["get_server"]
    assert final.physical_id == adopted
    assert sum(methods(r).count("create_server") for r in results if isinstance(r, Call)) <= 1


def test_a_lost_create_never_creates_twice() -> None:
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [LOOKUPS, None, {"existing": ok([TAGGED])}])
    creates = sum(methods(r).count("create_server") for r in results if isinstance(r, Call))
    assert creates == 1  # the one whose answer was lost; the re-find adopts what it made
    assert methods(results[2]) == ["servers"]


@pytest.mark.parametrize(("script", "done_at"), [
    ([{"deleted": ok()}, {"server": ok(_server("ACTIVE", task_state="deleting"))}, {"server": NOT_FOUND}], 3),
    ([{"deleted": NOT_FOUND}], 1),
    ([{"deleted": ok()}, {"server": ok(_server("DELETED"))}], 2),
    ([None, {"deleted": ok()}, {"server": NOT_FOUND}], 3),
])
def test_delete_waits_until_gone(script: list[Any], done_at: int) -> None:
    results, _ = run(SERVER, Action.DELETE, ctx_for(PROPS, physical_id="s1"), script)
    assert methods(results[0]) == ["delete_server"]
    assert isinstance(results[done_at], Done)
    assert all(isinstance(r, Call) for r in results[:done_at])


def test_delete_error_fails() -> None:
    server = _server("ERROR", fault={"message": "disk stuck", "code": 500})
    results, _ = run(SERVER, Action.DELETE, ctx_for(PROPS, physical_id="s1"),
                     [{"deleted": ok()}, {"server": ok(server)}])
    assert isinstance(results[-1], Failed)
    assert results[-1].message == ('Went to status ERROR due to "Server st-r1-abcdefghijkl delete failed: '
                                   '(500) disk stuck"')


def test_delete_without_id_finds_the_half_made_server() -> None:
    results, _ = run(SERVER, Action.DELETE, ctx_for(PROPS), [
        {"existing": ok([OTHER, TAGGED])}, {"deleted": ok()}, {"server": NOT_FOUND}])
    assert methods(results[0]) == ["servers"]
    assert call_of(results[1], "delete_server").args == ("s9",)
    assert isinstance(results[-1], Done)
    nothing, _ = run(SERVER, Action.DELETE, ctx_for(PROPS), [{"existing": ok([OTHER])}])
    assert isinstance(nothing[-1], Done)


def _update_ctx(**changes: Any) -> Any:
    new = SERVER.validate({**_raw(), **changes}, resource_name="r1")
    return after(ctx_for(new, old_properties=PROPS, physical_id="s1"), Done(),
                 elapsed=0)


def _raw() -> dict[str, Any]:
    return {"flavor": "m1.small", "image": "cirros", "networks": [{"network": "private"}],
            "user_data": "#!/bin/sh\necho hi", "user_data_format": "RAW", "metadata": {"role": "web", "n": 1}}


def test_resize_confirms_after_the_named_step() -> None:
    ctx = _update_ctx(flavor="m1.medium")
    results, final = run(SERVER, Action.UPDATE, ctx, [
        {"flavor": ok({"id": "f3", "name": "m1.medium"})}, {"resize": ok()},
        {"server": ok(_server("RESIZE"))}, {"server": ok(_server("VERIFY_RESIZE"))}, {},
        {"confirm": ok()}, {"server": ok(_server("ACTIVE"))}, {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    assert methods(results[0]) == ["find_flavor"]
    assert call_of(results[1], "resize_server").args == ("s1", "f3")
    assert methods(results[3]) == ["get_server"]
    paused = results[4]
    assert isinstance(paused, Wait) and paused.step == "resize"
    assert "resize" in SERVER.named_steps
    assert methods(results[5]) == ["confirm_server_resize"]
    assert methods(results[6]) == ["get_server"]
    assert methods(results[7]) == ["get_server", "ports"]
    assert isinstance(results[8], Done)
    assert "todo" not in final.data


def test_resize_to_error_fails_as_a_server_a_remake_mends() -> None:
    results, _ = run(SERVER, Action.UPDATE, _update_ctx(flavor="m1.medium"), [
        {"flavor": ok({"id": "f3"})}, {"resize": ok()}, {"server": ok(_server("ERROR"))}])
    assert isinstance(results[-1], Failed) and results[-1].remake
    assert results[-1].status_reason("resources", "r1") == (
        "Error: resources.r1: Resizing to 'm1.medium' failed, status 'ERROR'")


GONE = Failed("Server s1 is gone from the cloud", error="ResourceInError", remake=True)
# Not found for longer than cloud_steps.GONE_AFTER_SECONDS (a step is a second here).
LOST = [{"server": NOT_FOUND}] * 11


def test_a_server_deleted_while_it_builds_is_one_to_make_again() -> None:
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [
        LOOKUPS, {"created": ok({"id": "s1"})}, {"server": ok(_server("BUILD"))}, *LOST])
    assert results[-1] == GONE  # ResourceInError: action_retry_limit makes it again
    assert all(methods(r) == ["get_server"] for r in results[3:-1])  # not taken for gone at once


def test_a_server_not_found_for_a_moment_is_waited_for() -> None:
    # Nova may answer 404 for a moment after the create (Heat keeps waiting there too).
    results, _ = run(SERVER, Action.CREATE, ctx_for(PROPS), [
        LOOKUPS, {"created": ok({"id": "s1"})}, *LOST[:5], {"server": ok(_server("ACTIVE"))},
        {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    assert isinstance(results[-1], Done)


@pytest.mark.parametrize(("changes", "answers"), [
    ({"flavor": "m1.medium"}, [{"flavor": ok({"id": "f3"})}, {"resize": ok()}, *LOST]),
    ({"flavor": "m1.medium"}, [{"flavor": ok({"id": "f3"})}, {"resize": ok()},
                               {"server": ok(_server("VERIFY_RESIZE"))}, {}, {"confirm": ok()}, *LOST]),
    ({"image": "fedora"}, [{"image": ok({"id": "img2"})}, {"rebuild": ok()}, *LOST]),
], ids=["resizing", "confirming", "rebuilding"])
def test_a_server_deleted_while_its_update_waits_is_one_to_make_again(
        changes: dict[str, Any], answers: list[dict[str, Answer]]) -> None:
    results, _ = run(SERVER, Action.UPDATE, _update_ctx(**changes), answers)
    assert results[-1] == GONE
    assert isinstance(results[-2], Call)


def test_rebuild_and_quick_changes() -> None:
    ctx = _update_ctx(image="fedora", name="web-1", metadata={"role": "db"})
    results, _ = run(SERVER, Action.UPDATE, ctx, [
        {"rename": ok(), "metadata": ok(), "metadata_removed": ok()}, {"image": ok({"id": "img2"})},
        {"rebuild": ok()}, {"server": ok(_server("REBUILD"))}, {"server": ok(ACTIVE)},
        {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    assert methods(results[0]) == ["update_server", "set_server_metadata", "delete_server_metadata"]
    assert call_of(results[0], "update_server").kwargs == {"name": "web-1"}
    assert call_of(results[0], "delete_server_metadata").kwargs == {"keys": ["n"]}
    assert methods(results[1]) == ["find_image"]
    assert call_of(results[2], "rebuild_server").args == ("s1", "img2")
    assert isinstance(results[-1], Done)


@pytest.mark.parametrize(("changes", "replace"), [
    ({"flavor": "m1.medium"}, False),
    ({"flavor": "m1.medium", "flavor_update_policy": "REPLACE"}, True),
    ({"image": "fedora"}, False),  # Heat's default image_update_policy is REBUILD
    ({"image": "fedora", "image_update_policy": "REPLACE"}, True),
    ({"image": "fedora", "image_update_policy": "REBUILD_PRESERVE_EPHEMERAL"}, False),
    ({"user_data": "other"}, True),  # user_data_update_policy REPLACE by default
    ({"user_data": "other", "user_data_update_policy": "IGNORE"}, False),
    ({"name": "x", "metadata": {"a": "b"}, "tags": ["t"], "admin_pass": "p"}, False),
    ({"key_name": "other"}, True),
    ({"availability_zone": "az2"}, True),
    ({"config_drive": True}, True),
    ({"networks": [{"network": "public"}]}, False),  # interfaces are attached and detached in place
    ({"networks": [{"allocate_network": "none"}]}, True),
    ({"networks": [{"network": "private", "tag": "x"}]}, False),
    ({"networks": [{"subnet": "private-subnet", "floating_ip": "fip-a"}]}, True),  # its own port: new
])
def test_replace_or_update(changes: dict[str, Any], replace: bool) -> None:
    new = SERVER.validate({**_raw(), **changes}, resource_name="r1")
    assert SERVER.needs_replace(PROPS, new) is replace


def test_validation_needs_an_image_or_a_volume() -> None:
    with pytest.raises(StackValidationFailed, match="Neither image nor bootable volume is specified "
                                                    "for instance srv"):
        SERVER.validate({"flavor": "m1.small"}, resource_name="srv")
    SERVER.validate({"flavor": "m1.small", "block_device_mapping_v2": [{"volume_id": "v1", "boot_index": 0}]},
                    resource_name="srv")


def test_observe() -> None:
    ctx = ctx_for(PROPS, physical_id="s1")
    call = SERVER.observe_call(ctx)
    assert call is not None and call.key == OBSERVE_KEY and call.method == "get_server"
    gone = SERVER.observe(after(ctx, Done(), {OBSERVE_KEY: NOT_FOUND}))
    assert gone is not None and gone.gone
    same = SERVER.observe(after(ctx, Done(), {OBSERVE_KEY: ok(ACTIVE)}))
    assert same is not None and same.properties == {"metadata": PROPS["metadata"]}
    drifted = SERVER.observe_listed(ctx, {**ACTIVE, "metadata": {"role": "db"},
                                          "flavor": {"original_name": "m1.large"}})
    assert drifted is not None and drifted.properties == {"metadata": {"role": "db"}, "flavor": "m1.large"}
    absent = SERVER.observe_listed(ctx, None)
    assert absent is not None and absent.gone
    stopped = SERVER.observe_listed(ctx, _server("SHUTOFF"))
    assert stopped is not None and stopped.error == "Server is SHUTOFF: stopped outside Ember"
    suspended = SERVER.observe_listed(ctx, _server("SUSPENDED"))  # Ember's own suspend
    assert suspended is not None and suspended.error is None
    listing = SERVER.list_call()
    assert listing is not None and listing.method == "servers"


def test_networks_change_in_place() -> None:
    old = SERVER.validate({**_raw(), "networks": [{"network": "private"}, {"port": "p-old"}]},
                          resource_name="r1")
    new = SERVER.validate({**_raw(), "networks": [{"network": "private"}, {"network": "public",
                                                                          "fixed_ip": "172.24.4.9"}]},
                          resource_name="r1")
    assert not SERVER.needs_replace(old, new)
    data = {"ids": '{"flavor":"f2","image":"img1","net0":"net-private"}', "ports": "[]"}
    ctx = after(ctx_for(new, old_properties=old, physical_id="s1", data=data), Done(), elapsed=0)
    results, final = run(SERVER, Action.UPDATE, ctx, [
        {"net1": ok({"id": "net-public"})}, {"detach_0": ok(), "attach_0": ok({"port_id": "p-new"})},
        {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    assert methods(results[0]) == ["find_network"]
    assert call_of(results[1], "delete_server_interface").args == ("p-old",)
    assert call_of(results[1], "delete_server_interface").kwargs == {"server": "s1"}
    assert call_of(results[1], "create_server_interface").kwargs == {
        "net_id": "net-public", "fixed_ips": [{"ip_address": "172.24.4.9"}]}
    assert methods(results[2]) == ["get_server", "ports"]
    assert isinstance(results[-1], Done)
    assert '"net1":"net-public"' in final.data["ids"] and '"net0":"net-private"' in final.data["ids"]


def _sent(result: Any) -> list[tuple[Any, ...]]:
    """The calls a step asked for: (args, kwargs) each."""
    assert isinstance(result, Call), result
    return [(c.args, c.kwargs) for c in result.calls]


def test_a_floating_ip_change_alone_points_the_floating_ips_anew() -> None:
    old = SERVER.validate({**_raw(), "networks": [{"port": "p1", "floating_ip": "fip-a"},
                                                  {"subnet": "private-subnet", "floating_ip": "fip-c"}]},
                          resource_name="r1")
    new = SERVER.validate({**_raw(), "networks": [{"port": "p1", "floating_ip": "fip-b"},
                                                  {"subnet": "private-subnet", "floating_ip": "fip-c"}]},
                          resource_name="r1")
    assert not SERVER.needs_replace(old, new)
    data = {"ids": '{"flavor":"f2","image":"img1"}', "ports": "[]", "internal_ports": '{"1":"ip1"}'}
    ctx = after(ctx_for(new, old_properties=old, physical_id="s1", data=data), Done(), elapsed=0)
    results, _ = run(SERVER, Action.UPDATE, ctx, [
        {"fip_off0": NOT_FOUND}, None, {"fip_on0": ok({})}, {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    # fip-a is let go first (gone already: fine), then fip-b points at p1; fip-c stays as it is.
    assert methods(results[0]) == ["update_ip"] and _sent(results[0]) == [(("fip-a",), {"port_id": None})]
    assert _sent(results[1]) == [(("fip-b",), {"port_id": "p1"})]
    assert _sent(results[2]) == [(("fip-b",), {"port_id": "p1"})]  # the answer was lost: sent again
    assert methods(results[3]) == ["get_server", "ports"] and isinstance(results[-1], Done)
    refused, _ = run(SERVER, Action.UPDATE, ctx, [{"fip_off0": ok({})}, {"fip_on0": NOT_FOUND}])
    assert isinstance(refused[-1], Failed)


@pytest.mark.parametrize(("action", "script", "last", "calls"), [
    (Action.SUSPEND, [{"server": ok(ACTIVE)}, {"power": ok()}, {"server": ok(ACTIVE)},
                      {"server": ok(_server("SUSPENDED"))}], Done, ["get_server", "suspend_server"]),
    (Action.SUSPEND, [{"server": ok(_server("SUSPENDED"))}], Done, ["get_server"]),
    (Action.SUSPEND, [{"server": NOT_FOUND}], Failed, ["get_server"]),
    (Action.SUSPEND, [{"server": ok(ACTIVE)}, {"power": ok()}, {"server": ok(_server("ERROR"))}], Failed,
     ["get_server", "suspend_server"]),
    (Action.RESUME, [{"server": ok(_server("SUSPENDED"))}, {"power": ok()}, {"server": ok(ACTIVE)}], Done,
     ["get_server", "resume_server"]),
    (Action.RESUME, [{"server": ok(_server("SUSPENDED"))}, None, {"server": ok(_server("SUSPENDED"))},
                     {"power": ok()}, {"server": ok(ACTIVE)}], Done, ["get_server", "resume_server"]),
])
def test_suspend_and_resume(action: Action, script: list[Any], last: type, calls: list[str]) -> None:
    results, _ = run(SERVER, action, ctx_for(PROPS, physical_id="s1"), script)
    assert isinstance(results[-1], last)
    seen = [m for r in results if isinstance(r, Call) for m in methods(r)]
    assert sorted(set(seen)) == sorted(calls)
    failed = results[-1]
    if isinstance(failed, Failed) and action is Action.SUSPEND and len(script) > 1:
        assert failed.message == ('Suspend of server st-r1-abcdefghijkl failed - Unknown status ERROR '
                                  'due to "Unknown"')


SUBNET_PROPS = SERVER.validate({"flavor": "m1.small", "image": "cirros", "user_data_format": "RAW",
                                "networks": [{"subnet": "private-subnet", "fixed_ip": "10.0.0.9"}]},
                               resource_name="r1")
SUBNET_LOOKUPS = {"flavor": LOOKUPS["flavor"], "image": LOOKUPS["image"], "existing": ok([]),
                  "subnet0": ok({"id": "sub1", "network_id": "net-private"})}
MY_PORT = {"id": "ip1", "name": "r1-port-0", "description": TAG}


def test_a_subnet_entry_gets_its_own_port() -> None:
    results, final = run(SERVER, Action.CREATE, ctx_for(SUBNET_PROPS), [
        SUBNET_LOOKUPS, {"iport0": ok({"id": "ip1"})}, {"created": ok({"id": "s1"})}])
    assert methods(results[0]) == ["find_flavor", "find_image", "find_subnet"]
    assert call_of(results[1], "create_port").kwargs == {
        "network_id": "net-private", "name": "r1-port-0", "description": TAG,
        "fixed_ips": [{"subnet_id": "sub1", "ip_address": "10.0.0.9"}]}
    assert call_of(results[2], "create_server").kwargs["networks"] == [{"port": "ip1"}]
    assert final.data["internal_ports"] == '{"0":"ip1"}'


FLOATING_PROPS = SERVER.validate({"flavor": "m1.small", "image": "cirros", "user_data_format": "RAW",
                                  "networks": [{"subnet": "private-subnet", "fixed_ip": "10.0.0.9",
                                                "floating_ip": "fip-a"},
                                               {"port": "given-port", "floating_ip": "fip-b"},
                                               {"network": "private"}]}, resource_name="r1")
FLOATING_LOOKUPS = {**SUBNET_LOOKUPS, "net2": ok({"id": "net-private", "name": "private"})}


def test_floating_ips_point_at_their_entries_ports_before_the_server_is_made() -> None:
    results, final = run(SERVER, Action.CREATE, ctx_for(FLOATING_PROPS), [
        FLOATING_LOOKUPS, {"iport0": ok({"id": "ip1"})},
        {"fip0": ok({"id": "fip-a"}), "fip1": ok({"id": "fip-b"})}, {"created": ok({"id": "s1"})}])
    assert methods(results[2]) == ["update_ip", "update_ip"]
    assert (call_of(results[2], "update_ip").args, call_of(results[2], "update_ip").kwargs) == (
        ("fip-a",), {"port_id": "ip1", "fixed_ip_address": "10.0.0.9"})
    assert _sent(results[2])[1] == (("fip-b",), {"port_id": "given-port"})
    assert call_of(results[3], "create_server").kwargs["networks"] == [
        {"port": "ip1"}, {"port": "given-port"}, {"uuid": "net-private"}]
    assert isinstance(results[3], Call) and final.data.get("floating_associated") == "1"


def test_a_lost_floating_ip_answer_sends_the_same_request_again_and_a_refusal_fails() -> None:
    results, _ = run(SERVER, Action.CREATE, ctx_for(FLOATING_PROPS), [
        FLOATING_LOOKUPS, {"iport0": ok({"id": "ip1"})}, None])
    assert methods(results[3]) == ["update_ip", "update_ip"]
    assert _sent(results[3]) == _sent(results[2])
    refused, _ = run(SERVER, Action.CREATE, ctx_for(FLOATING_PROPS), [
        FLOATING_LOOKUPS, {"iport0": ok({"id": "ip1"})},
        {"fip0": error(ErrorKind.CONFLICT, "Port ip1 already has a floating IP", 409), "fip1": ok({})}])
    assert isinstance(refused[-1], Failed) and "already has a floating IP" in refused[-1].message


def test_lost_port_answers_reuse_the_tagged_ports() -> None:
    results, _ = run(SERVER, Action.CREATE, ctx_for(SUBNET_PROPS), [
        SUBNET_LOOKUPS, None,
        {"internal_found": ok([MY_PORT, {"id": "x", "name": "r1-port-0", "description": ""}])}])
    assert methods(results[2]) == ["ports"] and call_of(results[2], "ports").kwargs == {"description": TAG}
    assert call_of(results[3], "create_server").kwargs["networks"] == [{"port": "ip1"}]
    assert sum(methods(r).count("create_port") for r in results if isinstance(r, Call)) == 1


def test_delete_removes_the_servers_own_ports() -> None:
    results, _ = run(SERVER, Action.DELETE, ctx_for(SUBNET_PROPS, physical_id="s1"), [
        {"deleted": ok()}, {"server": NOT_FOUND}, {"internal_found": ok([MY_PORT])},
        {"iport_delete_0": ok()}])
    assert methods(results[2]) == ["ports"]
    assert call_of(results[3], "delete_port").args == ("ip1",)
    assert isinstance(results[-1], Done)
    plain, _ = run(SERVER, Action.DELETE, ctx_for(PROPS, physical_id="s1"), [{"deleted": NOT_FOUND}])
    assert isinstance(plain[-1], Done)  # no ports of its own: no listing


@pytest.mark.parametrize(("answer", "reason"), [
    (ok(ACTIVE), None),
    (ok(_server("SHUTOFF")), "Error: resources.r1: 'status': expected 'ACTIVE', got 'SHUTOFF'"),
    (NOT_FOUND, "NotFoundException: resources.r1: Not found"),
])
def test_check(answer: Any, reason: str | None) -> None:
    results, _ = run(SERVER, Action.CHECK, ctx_for(PROPS, physical_id="s1"), [{"server": answer}])
    assert methods(results[0]) == ["get_server"]
    last = results[-1]
    if reason is None:
        assert isinstance(last, Done)
    else:
        assert isinstance(last, Failed) and last.status_reason("resources", "r1") == reason


def test_own_ports_take_the_servers_security_groups() -> None:
    props = SERVER.validate({"flavor": "m1.small", "image": "cirros", "security_groups": ["web"],
                             "networks": [{"subnet": "private-subnet"}]}, resource_name="r1")
    results, _ = run(SERVER, Action.CREATE, ctx_for(props), [
        {**SUBNET_LOOKUPS, "sg0": ok({"id": "sg-web"})}])
    assert "find_security_group" in methods(results[0])
    assert call_of(results[1], "create_port").kwargs["security_group_ids"] == ["sg-web"]
    missing, _ = run(SERVER, Action.CREATE, ctx_for(props), [{**SUBNET_LOOKUPS, "sg0": NOT_FOUND}])
    assert isinstance(missing[-1], Failed) and missing[-1].status_reason("resources", "r1") == (
        "Property error: resources.r1.properties.security_groups[0]: Error validating value 'web': "
        "Unable to find security_group with name or id 'web'")


def test_a_resize_the_cloud_confirmed_itself_goes_on() -> None:
    old_flavor = _server("ACTIVE", flavor={"original_name": "m1.small"}, task_state="resize_prep")
    new_flavor = _server("ACTIVE", flavor={"original_name": "m1.medium"})
    results, _ = run(SERVER, Action.UPDATE, _update_ctx(flavor="m1.medium"), [
        {"flavor": ok({"id": "f3"})}, {"resize": ok()}, {"server": ok(old_flavor)},
        {"server": ok(new_flavor)}])
    assert methods(results[3]) == ["get_server"]  # not begun yet: wait
    assert methods(results[4]) == ["get_server", "ports"]  # resized and confirmed: finish


def test_a_resize_nova_gave_up_fails() -> None:
    """Nova puts the server back to ACTIVE on its old flavor when the resize fails before it began."""
    given_up = _server("ACTIVE", flavor={"original_name": "m1.small"}, task_state=None)
    results, _ = run(SERVER, Action.UPDATE, _update_ctx(flavor="m1.medium"), [
        {"flavor": ok({"id": "f3"})}, {"resize": ok()}, {"server": ok(given_up)}])
    assert isinstance(results[-1], Failed) and not results[-1].remake  # the server is fine as it is
    assert results[-1].message == "Resizing to 'm1.medium' failed, status 'ACTIVE'"


@pytest.mark.parametrize(("props", "message"), [
    ({"block_device_mapping": [{"device_name": "vda", "volume_id": "v"}],
      "block_device_mapping_v2": [{"volume_id": "v"}]},
     "Cannot define the following properties at the same time: block_device_mapping, "
     "block_device_mapping_v2."),
    ({"block_device_mapping": [{"device_name": "vdb"}]},
     "Either volume_id or snapshot_id must be specified for device mapping vdb"),
    ({"block_device_mapping_v2": [{"boot_index": 0}]},
     "Either volume_id, snapshot_id, image_id, swap_size, ephemeral_size or ephemeral_format must be "
     "specified."),
    ({"image": "cirros", "block_device_mapping_v2": [{"volume_id": "v", "boot_index": 0}]},
     "Multiple bootable sources for instance srv."),
    ({"block_device_mapping_v2": [{"swap_size": 512}]},
     "Neither image nor bootable volume is specified for instance srv"),
    ({"image": "cirros", "networks": [{"fixed_ip": "10.0.0.1"}]},
     'One of the properties "network", "port", "allocate_network" or "subnet" should be set for the '
     'specified network of server "srv".'),
    ({"image": "cirros", "networks": [{"port": "p", "fixed_ip": "10.0.0.1"}]},
     "Cannot define the following properties at the same time: networks/fixed_ip, networks/port."),
    ({"image": "cirros", "networks": [{"allocate_network": "auto"}, {"network": "n"}]},
     'Property "allocate_network" can not be specified if multiple network interfaces set for server.'),
    ({"image": "cirros", "networks": [{"allocate_network": "auto", "network": "n"}]},
     'Can not specify "allocate_network" with other keys of networks at the same time.'),
    ({"image": "cirros", "security_groups": ["web"], "networks": [{"port": "p"}]},
     "Cannot define the following properties at the same time: security_groups, networks/port."),
    ({"image": "cirros", "networks": [{"network": "n", "floating_ip": "f"}]},
     'Property "floating_ip" is not supported if only "network" is specified, because the corresponding '
     "port can not be retrieved."),
])
def test_heats_validation_rules(props: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as failed:
        SERVER.validate({"flavor": "m1.small", **props}, resource_name="srv")
    assert str(failed.value) == message


@pytest.mark.parametrize("props", [
    {"block_device_mapping_v2": [{"volume_id": "v", "boot_index": 0}, {"swap_size": 512}]},
    {"block_device_mapping": [{"device_name": "vda", "volume_id": "v"}]},
    {"image": "cirros", "networks": [{"subnet": "s", "floating_ip": "f"}], "security_groups": ["web"]},
])
def test_valid_servers(props: dict[str, Any]) -> None:
    SERVER.validate({"flavor": "m1.small", **props}, resource_name="srv")


def test_a_software_config_server_is_told_to_poll_embers_api() -> None:
    props = SERVER.validate({"flavor": "m1.small", "image": "cirros", "networks": [{"network": "private"}],
                             "user_data_format": "SOFTWARE_CONFIG"}, resource_name="r1")
    ctx = dataclasses.replace(ctx_for(props), api_url="http://ember:8004", project="demo")
    results, final = run(SERVER, Action.CREATE, ctx, [
        LOOKUPS, {"created": ok({"id": "s1"})}, {"server": ok(_server("ACTIVE"))},
        {"server": ok(ACTIVE), "ports": ok(PORTS)}])
    create = results[1]
    assert isinstance(create, Call) and create.stack_user is not None
    # Its agent polls as the server's stack user, whose hash alone the worker stores.
    user_id, password = create.stack_user.id, json.loads(final.data["os_collect_config"])["heat"]["password"]
    assert len(password) >= 40 and create.stack_user.secret_hash == stack_user.digest(password)
    collect = {"collectors": ["heat", "local"], "heat": {
        "user_id": user_id, "password": password, "auth_url": "http://ember:8004/identity/v3",
        "project_id": "demo", "stack_id": f"{ctx.stack_name}/{ctx.stack_id}", "resource_name": "r1",
        "region_name": None}}
    sent = base64.b64decode(call_of(create, "create_server").kwargs["user_data"]).decode()
    [init_data] = [p for p in email.message_from_string(sent).walk()
                   if p.get_filename() == "cfn-init-data"]
    assert json.loads(str(init_data.get_payload())) == {"deployments": [], "os-collect-config": collect}
    assert isinstance(results[-1], Done)
    assert SERVER.resolve_attribute("os_collect_config", "s1", final.data, props) == collect
    # A create started again (a lost answer) keeps the user it made, rather than make a second one.
    kept = dataclasses.replace(ctx, data={"os_collect_config": json.dumps(collect)})
    again, _ = run(SERVER, Action.CREATE, kept, [LOOKUPS])
    assert isinstance(again[1], Call) and again[1].stack_user == create.stack_user
    # Any other server has none, as Heat's.
    assert SERVER.resolve_attribute("os_collect_config", "s1", {}, PROPS) == {}
