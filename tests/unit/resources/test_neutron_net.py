"""OS::Neutron::Net as steps, and the shared Neutron steps (adopt, wait, delete, observe) through it."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import Answer, CloudError, ErrorKind
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY
from libs.resources.neutron.base import PHASE, SHOW
from libs.resources.steps import Call, Done, Failed, Observed
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

NET = plugin("OS::Neutron::Net")
NAME = "st-r1-abcdefghijkl"
PROPS = NET.validate({}, resource_name="r1")
NET_ID = "5f0a1c3e-8d2b-4b8e-9c1a-0a1b2c3d4e5f"
QOS_ID = "7e1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"


def _net(status: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    return {"id": NET_ID, "name": NAME, "status": status, "subnet_ids": [], "mtu": 1450,
            "is_admin_state_up": True, "is_shared": False, "is_port_security_enabled": True,
            "project_id": "demo", "tags": [TAG], "location": {"cloud": "x"}, **extra}


# ---- the schema, as read in Heat's net.py ----------------------------------------------------------

@pytest.mark.parametrize(("name", "kind", "default", "update_allowed"), [
    ("name", "string", None, True),
    ("value_specs", "map", {}, True),
    ("admin_state_up", "boolean", True, True),
    ("tenant_id", "string", None, False),
    ("shared", "boolean", False, True),
    ("dhcp_agent_ids", "list", None, True),
    ("port_security_enabled", "boolean", None, True),
    ("qos_policy", "string", None, True),
    ("dns_domain", "string", None, True),
    ("availability_zone_hints", "list", None, False),
    ("tags", "list", None, True),
])
def test_schema(name: str, kind: str, default: Any, update_allowed: bool) -> None:
    prop = NET.properties_schema[name]
    assert (prop.type, prop.default, prop.update_allowed) == (kind, default, update_allowed)


def test_attributes_and_constraints() -> None:
    assert list(NET.attributes_schema) == ["status", "name", "subnets", "admin_state_up", "tenant_id",
                                           "port_security_enabled", "mtu", "qos_policy_id", "l2_adjacency",
                                           "segments"]
    assert NET.schema_api()["properties"]["qos_policy"]["constraints"] == [
        {"custom_constraint": "neutron.qos_policy"}]


def test_value_specs_may_not_repeat_properties() -> None:
    with pytest.raises(StackValidationFailed) as failed:
        NET.validate({"value_specs": {"shared": True, "name": "x", "mtu": 1}}, resource_name="r1")
    assert str(failed.value) == "name, shared not allowed in value_specs"


# ---- create ------------------------------------------------------------------------------------------

TAGGED = {"tags": ok(None)}


def by_key(result: Any, key: str) -> Any:
    assert isinstance(result, Call), result
    return next(c for c in result.calls if c.key == key)


def test_create_then_tag_then_done() -> None:
    results, final = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": ok(_net())}, TAGGED])
    assert methods(results[0]) == ["create_network"]
    # Ember's tag goes in the description too (a crash between create and tag is found by it).
    assert call_of(results[0], "create_network").kwargs == {"name": NAME, "admin_state_up": True,
                                                             "shared": False, "description": TAG}
    # Neutron takes no tags in a create: Ember's tag follows at once, with the id recorded.
    tag = results[1]
    assert isinstance(tag, Call) and tag.physical_id == NET_ID
    assert call_of(tag, "set_tags").args == ({"$existing": "network.v2.network.Network", "id": NET_ID}, [TAG])
    done = results[2]
    assert isinstance(done, Done) and done.physical_id == NET_ID
    assert final.data.get(PHASE) is None
    # Attributes read Neutron's view of the object, whatever names the sdk used.
    attrs = NET.all_attributes(NET_ID, final.data, PROPS)
    assert attrs["admin_state_up"] is True and attrs["mtu"] == 1450 and attrs["tenant_id"] == "demo"
    assert attrs["subnets"] == [] and attrs["status"] == "ACTIVE"
    assert "location" not in NET.attribute("show", NET_ID, final.data, PROPS)
    assert NET.reference_id(NET_ID, final.data, resource_name="r1") == NET_ID
    assert NET.reference_id(None, {}, resource_name="r1") is None


def test_create_passes_what_was_given_and_value_specs() -> None:
    props = NET.validate({"name": "web", "tenant_id": "t1", "dns_domain": "example.org.", "tags": ["a"],
                          "value_specs": {"provider:network_type": "vxlan"}}, resource_name="r1")
    results, _ = run(NET, Action.CREATE, ctx_for(props), [{"create": ok(_net())}])
    assert call_of(results[0], "create_network").kwargs == {
        "name": "web", "admin_state_up": True, "shared": False, "tenant_id": "t1",
        "dns_domain": "example.org.", "provider:network_type": "vxlan", "description": TAG}
    assert call_of(results[1], "set_tags").args[1] == ["a", TAG]


def test_create_looks_up_a_qos_policy_by_name() -> None:
    props = NET.validate({"qos_policy": "gold"}, resource_name="r1")
    results, _ = run(NET, Action.CREATE, ctx_for(props), [{"find:qos_policy:gold": ok({"id": QOS_ID})}])
    assert methods(results[0]) == ["find_qos_policy"]
    assert call_of(results[0], "find_qos_policy").args == ("gold",)
    assert call_of(results[1], "create_network").kwargs["qos_policy_id"] == QOS_ID
    by_id = NET.start(Action.CREATE, ctx_for(NET.validate({"qos_policy": QOS_ID}, resource_name="r1")))
    assert methods(by_id) == ["create_network"]


def test_a_name_not_found_fails_with_the_clouds_message() -> None:
    props = NET.validate({"qos_policy": "gold"}, resource_name="r1")
    missing = error(ErrorKind.NOT_FOUND, "No QoSPolicy found for gold", None, "ResourceNotFound")
    results, _ = run(NET, Action.CREATE, ctx_for(props), [{"find:qos_policy:gold": missing}])
    assert results[1] == Failed("No QoSPolicy found for gold", "ResourceNotFound")


def test_create_waits_while_building_then_completes() -> None:
    results, final = run(NET, Action.CREATE, ctx_for(PROPS), [
        {"create": ok(_net("BUILD"))}, TAGGED, {"get": ok(_net("BUILD"))}, {"get": ok(_net("DOWN"))}])
    poll = results[2]
    assert isinstance(poll, Call) and poll.delay > 0 and methods(poll) == ["get_network"]
    assert call_of(poll, "get_network").args == (NET_ID,)
    assert methods(results[3]) == ["get_network"]
    assert isinstance(results[4], Done) and final.physical_id == NET_ID


@pytest.mark.parametrize(("status", "failure"), [
    ("ERROR", Failed('Went to status ERROR due to "Unknown"', "ResourceInError")),
    ("DEGRADED", Failed('Went to status DEGRADED due to "Unknown"', "ResourceInError")),
    ("WEIRD", Failed('Resource is not built - Unknown status WEIRD due to "Unknown"',
                     "ResourceUnknownStatus")),
])
def test_create_fails_on_a_bad_status_with_the_id_recorded(status: str, failure: Failed) -> None:
    results, final = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": ok(_net(status))}, TAGGED])
    assert final.physical_id == NET_ID  # recorded before failing, so a delete finds it
    assert results[2] == failure


def test_a_refused_create_fails_with_the_clouds_message() -> None:
    refused = error(ErrorKind.BAD_REQUEST, "Invalid input for operation: bad mtu.", 400,
                    "BadRequestException")
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": refused}])
    # As Heat's neutronclient names and prints it (measured: clouds/create_failed_more).
    assert results[1] == Failed("Invalid input for operation: bad mtu.", "BadRequest")
    typed = Answer(error=CloudError(ErrorKind.BAD_REQUEST, "IP address 1.2.3.4 is not a valid IP for the "
                                    "specified subnet.", 400, "BadRequestException", "req-9",
                                    "InvalidIpForSubnet"))
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": typed}])
    assert results[1] == Failed("IP address 1.2.3.4 is not a valid IP for the specified subnet.\n"
                                "Neutron server returns request_ids: ['req-9']", "InvalidIpForSubnetClient")


# ---- crash safety: a lost create answer --------------------------------------------------------------

def test_lost_create_answer_adopts_what_the_tag_finds() -> None:
    results, final = run(NET, Action.CREATE, ctx_for(PROPS), [None, {"adopt": ok([_net()]),
                                                                     "adopt_named": ok([])}])
    assert methods(results[1]) == ["networks", "networks"]
    assert by_key(results[1], "adopt").kwargs == {"tags": TAG}
    assert by_key(results[1], "adopt_named").kwargs == {"description": TAG}
    assert isinstance(results[2], Done) and results[2].physical_id == NET_ID
    assert final.physical_id == NET_ID


def test_crash_between_create_and_tag_adopts_the_untagged_object_of_our_name() -> None:
    ctx = ctx_for(PROPS, now=1_800_000_000.0)
    untagged = _net(tags=[], created_at="2027-01-15T08:00:00Z")     # after the action began
    results, _ = run(NET, Action.CREATE, ctx, [None, {"adopt": ok([]), "adopt_named": ok([untagged])},
                                               TAGGED])
    tag = results[2]
    assert isinstance(tag, Call) and tag.physical_id == NET_ID and methods(tag) == ["set_tags"]
    assert isinstance(results[3], Done)


def test_found_by_description_whenever_it_was_made() -> None:
    ctx = ctx_for(PROPS, now=1_800_000_000.0)
    described = _net(tags=[], description=TAG, created_at="2020-01-01T00:00:00Z")
    results, _ = run(NET, Action.CREATE, ctx, [None, {"adopt": ok([]), "adopt_named": ok([described])}])
    assert methods(results[2]) == ["set_tags"]


def test_a_description_of_the_users_means_finding_by_name_and_only_one() -> None:
    props = NET.validate({"value_specs": {"description": "mine"}}, resource_name="r1")
    ctx = ctx_for(props, now=1_800_000_000.0)
    results, _ = run(NET, Action.CREATE, ctx, [None])
    assert by_key(results[1], "adopt_named").kwargs == {"name": NAME}
    twins = [_net(tags=[], created_at="2027-01-15T08:00:00Z"),
             _net(id="other", tags=[], created_at="2027-01-15T08:00:01Z")]
    results, _ = run(NET, Action.CREATE, ctx, [None, {"adopt": ok([]), "adopt_named": ok(twins)}])
    assert methods(results[2]) == ["create_network"]  # which is ours cannot be told: none is taken


@pytest.mark.parametrize("other", [
    _net(tags=["someone-else"]),                                    # tagged: not ours
    _net(tags=[], created_at="2020-01-01T00:00:00Z"),               # made long before the action
])
def test_an_object_of_the_same_name_that_is_not_ours_is_left_alone(other: dict[str, Any]) -> None:
    ctx = ctx_for(PROPS, now=1_800_000_000.0)
    results, _ = run(NET, Action.CREATE, ctx, [None, {"adopt": ok([]), "adopt_named": ok([other])}])
    assert methods(results[2]) == ["create_network"]


def test_lost_create_answer_and_nothing_made_creates_once_more() -> None:
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [None, {"adopt": ok([]), "adopt_named": ok([])}])
    assert methods(results[2]) == ["create_network"]


def test_lost_listing_answer_lists_again() -> None:
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [None, None])
    assert methods(results[2]) == ["networks", "networks"]


def test_lost_lookup_and_tag_answers_ask_again() -> None:
    props = NET.validate({"qos_policy": "gold"}, resource_name="r1")
    results, _ = run(NET, Action.CREATE, ctx_for(props), [None])
    assert methods(results[1]) == ["find_qos_policy"]
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": ok(_net())}, None])
    assert methods(results[2]) == ["set_tags"]


def test_lost_wait_answer_asks_again() -> None:
    results, _ = run(NET, Action.CREATE, ctx_for(PROPS), [{"create": ok(_net("BUILD"))}, TAGGED, None])
    assert methods(results[3]) == ["get_network"]


# ---- delete ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [ok(None), NOT_FOUND])
def test_delete_done_when_deleted_or_already_gone(answer: Any) -> None:
    ctx = ctx_for(PROPS, physical_id=NET_ID)
    results, _ = run(NET, Action.DELETE, ctx, [{"delete": answer}])
    assert call_of(results[0], "delete_network").args == (NET_ID,)
    assert call_of(results[0], "delete_network").kwargs == {"ignore_missing": False}
    assert isinstance(results[1], Done)


def test_delete_refused_fails_and_lost_answer_asks_again() -> None:
    ctx = ctx_for(PROPS, physical_id=NET_ID)
    in_use = error(ErrorKind.CONFLICT, "Unable to complete operation on network. There are one or more "
                   "ports still in use on the network.", 409, "ConflictException")
    results, _ = run(NET, Action.DELETE, ctx, [{"delete": in_use}])
    assert isinstance(results[1], Failed) and results[1].error == "Conflict"
    results, _ = run(NET, Action.DELETE, ctx, [None])
    assert methods(results[1]) == ["delete_network"]


def test_delete_of_a_never_made_resource_does_nothing() -> None:
    assert isinstance(NET.start(Action.DELETE, ctx_for(PROPS)), Done)


def test_delete_after_a_lost_create_answer_sweeps_by_tag() -> None:
    ctx = ctx_for(PROPS, data={PHASE: "create"})
    results, _ = run(NET, Action.DELETE, ctx, [{"adopt": ok([_net()]), "adopt_named": ok([])},
                                               {"delete": ok(None)}])
    assert methods(results[0]) == ["networks", "networks"]
    assert call_of(results[1], "delete_network").args == (NET_ID,)
    assert isinstance(results[1], Call) and results[1].physical_id == NET_ID
    assert isinstance(results[2], Done)
    nothing, _ = run(NET, Action.DELETE, ctx, [{"adopt": ok([]), "adopt_named": ok([])}])
    assert isinstance(nothing[1], Done)


# ---- update ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("change", "replace"), [
    ({"name": "other"}, False),
    ({"admin_state_up": False}, False),
    ({"shared": True}, False),
    ({"port_security_enabled": False}, False),
    ({"dns_domain": "x.org."}, False),
    ({"tags": ["a"]}, False),
    ({"value_specs": {"mtu": 1400}}, False),
    ({"tenant_id": "other"}, True),
    ({"availability_zone_hints": ["az2"]}, True),
])
def test_update_in_place_or_replace(change: dict[str, Any], replace: bool) -> None:
    new = NET.validate(change, resource_name="r1")
    assert NET.needs_replace(PROPS, new) is replace


def test_update_sends_the_changes_and_waits_for_the_status() -> None:
    old = NET.validate({"tags": ["a"], "value_specs": {"mtu": 1400, "x": 1}}, resource_name="r1")
    new = NET.validate({"name": "web", "admin_state_up": False, "tags": ["b"],
                        "value_specs": {"mtu": 1400, "x": 2}}, resource_name="r1")
    ctx = ctx_for(new, old_properties=old, physical_id=NET_ID, data={SHOW: "{}"})
    results, final = run(NET, Action.UPDATE, ctx, [
        {"update": ok(_net("BUILD", name="web")), "tags": ok(None)}, {"get": ok(_net(name="web"))}])
    assert call_of(results[0], "update_network").args == (NET_ID,)
    assert call_of(results[0], "update_network").kwargs == {"name": "web", "admin_state_up": False, "x": 2}
    assert call_of(results[0], "set_tags").args == (
        {"$existing": "network.v2.network.Network", "id": NET_ID}, ["b", TAG])
    assert methods(results[1]) == ["get_network"]
    assert isinstance(results[2], Done)
    assert NET.attribute("name", NET_ID, final.data, new) == "web"


def test_update_of_a_removed_name_gives_back_the_physical_name() -> None:
    old = NET.validate({"name": "web"}, resource_name="r1")
    result = NET.start(Action.UPDATE, ctx_for(PROPS, old_properties=old, physical_id=NET_ID))
    assert call_of(result, "update_network").kwargs == {"name": NAME}


def test_update_lost_answers_update_again_and_errors_fail() -> None:
    new = NET.validate({"name": "web"}, resource_name="r1")
    ctx = ctx_for(new, old_properties=PROPS, physical_id=NET_ID)
    results, _ = run(NET, Action.UPDATE, ctx, [None])
    assert methods(results[1]) == ["update_network"]
    refused = error(ErrorKind.FORBIDDEN, "Not allowed", 403, "ForbiddenException")
    results, _ = run(NET, Action.UPDATE, ctx, [{"update": refused}])
    assert results[1] == Failed("Not allowed", "Forbidden")


# ---- observe -----------------------------------------------------------------------------------------

def test_observe_one_and_listed() -> None:
    props = NET.validate({"name": "web", "tags": ["a"]}, resource_name="r1")
    ctx = ctx_for(props, physical_id=NET_ID)
    call = NET.observe_call(ctx)
    assert call is not None and (call.key, call.method, call.args) == (OBSERVE_KEY, "get_network", (NET_ID,))
    live = _net(name="web", is_admin_state_up=False, tags=[TAG, "user"])
    seen = NET.observe(after(ctx, Done(), {OBSERVE_KEY: ok(live)}))
    # What the template leaves unset (port_security_enabled here) is Neutron's, not a change.
    assert seen == Observed(properties={"name": "web", "admin_state_up": False, "tags": ["user"]})
    assert NET.observe(after(ctx, Done(), {OBSERVE_KEY: NOT_FOUND})) == Observed(gone=True)
    assert NET.observe(after(ctx, Done(), {})) is None
    listing = NET.list_call()
    assert listing is not None and listing.method == "networks"
    assert NET.observe_listed(ctx, None) == Observed(gone=True)
    renamed = NET.observe_listed(ctx, _net(name="renamed"))
    assert renamed is not None and renamed.properties["name"] == "renamed"
    unnamed = NET.observe_listed(ctx_for(PROPS, physical_id=NET_ID), _net())
    assert unnamed is not None and "name" not in unnamed.properties
