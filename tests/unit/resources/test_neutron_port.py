"""OS::Neutron::Port: names to ids, Heat's preparation of fixed IPs and groups, BUILD waits, replacement."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY
from libs.resources.neutron.base import SHOW
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

PORT = plugin("OS::Neutron::Port")
NAME = "st-r1-abcdefghijkl"
NET_ID = "5f0a1c3e-8d2b-4b8e-9c1a-0a1b2c3d4e5f"
SUB_ID = "0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"
SG_ID = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"
DEFAULT_SG = "1a2b3c4d-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
PORT_ID = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"


def _port(status: str = "DOWN", **extra: Any) -> dict[str, Any]:
    return {"id": PORT_ID, "name": NAME, "status": status, "network_id": NET_ID,
            "mac_address": "fa:16:3e:0:0:1",
            "fixed_ips": [{"subnet_id": SUB_ID, "ip_address": "10.0.0.5"}], "security_group_ids": [SG_ID],
            "is_admin_state_up": True, "device_id": "", "device_owner": "", "allowed_address_pairs": [],
            "binding_vnic_type": "normal", "project_id": "demo", "dns_assignment": None, "tags": [TAG],
            **extra}


def _props(**given: Any) -> dict[str, Any]:
    return PORT.validate({"network": NET_ID, **given}, resource_name="r1")


@pytest.mark.parametrize(("name", "kind", "default", "update_allowed"), [
    ("name", "string", None, True), ("network", "string", None, False), ("device_id", "string", "", True),
    ("device_owner", "string", "", True), ("fixed_ips", "list", None, True),
    ("security_groups", "list", None, True), ("replacement_policy", "string", "AUTO", True),
    ("dns_name", "string", None, True), ("tags", "list", None, True), ("value_specs", "map", {}, True),
    ("admin_state_up", "boolean", True, True), ("mac_address", "string", None, False),
    ("allowed_address_pairs", "list", None, True), ("binding:vnic_type", "string", "normal", True),
    ("port_security_enabled", "boolean", None, True), ("qos_policy", "string", None, True),
    ("propagate_uplink_status", "boolean", None, True), ("no_fixed_ips", "boolean", False, True),
])
def test_schema(name: str, kind: str, default: Any, update_allowed: bool) -> None:
    prop = PORT.properties_schema[name]
    assert (prop.type, prop.default, prop.update_allowed) == (kind, default, update_allowed)


def test_schema_hides_the_old_names_and_lists_heats_attributes() -> None:
    shown = PORT.schema_api()["properties"]
    assert "network_id" not in shown and "replacement_policy" not in shown
    assert set(shown["fixed_ips"]["schema"]["*"]["schema"]) == {"subnet_id", "subnet", "ip_address"}
    assert list(PORT.attributes_schema) == [
        "admin_state_up", "device_id", "device_owner", "fixed_ips", "mac_address", "name", "network_id",
        "security_groups", "status", "tenant_id", "allowed_address_pairs", "subnets",
        "port_security_enabled", "qos_policy_id", "dns_assignment", "network", "propagate_uplink_status"]


def test_old_names_translate() -> None:
    props = PORT.validate({"network_id": NET_ID, "fixed_ips": [{"subnet_id": SUB_ID}]}, resource_name="r1")
    assert props["network"] == NET_ID
    assert props["fixed_ips"] == [{"subnet": SUB_ID, "ip_address": None}]


def test_fixed_ips_and_no_fixed_ips_conflict() -> None:
    with pytest.raises(StackValidationFailed) as failed:
        _props(fixed_ips=[{"ip_address": "10.0.0.5"}], no_fixed_ips=True)
    assert str(failed.value) == ("Cannot define the following properties at the same time: fixed_ips, "
                                 "no_fixed_ips.")


def test_create_resolves_names_then_waits_past_build() -> None:
    props = PORT.validate({"network": "private",
                           "fixed_ips": [{"subnet": "private-subnet", "ip_address": "10.0.0.5"},
                                         {"ip_address": "10.0.0.6"}],
                           "security_groups": ["web", SG_ID],
                           "allowed_address_pairs": [{"ip_address": "10.0.0.0/24"}]}, resource_name="r1")
    results, final = run(PORT, Action.CREATE, ctx_for(props), [
        {"find:network:private": ok({"id": NET_ID}), "find:subnet:private-subnet": ok({"id": SUB_ID}),
         "find:security_group:web": ok({"id": SG_ID})},
        {"create": ok(_port("BUILD"))}, {"tags": ok(None)}, {"get": ok(_port("BUILD"))},
        {"get": ok(_port("ACTIVE"))}])
    assert methods(results[0]) == ["find_network", "find_subnet", "find_security_group"]
    assert call_of(results[1], "create_port").kwargs == {
        "name": NAME, "network_id": NET_ID, "device_id": "", "device_owner": "", "admin_state_up": True,
        "binding:vnic_type": "normal",
        "fixed_ips": [{"subnet_id": SUB_ID, "ip_address": "10.0.0.5"}, {"ip_address": "10.0.0.6"}],
        "security_groups": [SG_ID, SG_ID], "allowed_address_pairs": [{"ip_address": "10.0.0.0/24"}],
        "description": TAG}
    assert isinstance(results[2], Call) and results[2].physical_id == PORT_ID
    assert call_of(results[2], "set_tags").args[1] == [TAG]
    assert isinstance(results[5], Done)
    attrs = PORT.all_attributes(PORT_ID, final.data, props)
    assert attrs["fixed_ips"][0]["ip_address"] == "10.0.0.5" and attrs["mac_address"] == "fa:16:3e:0:0:1"
    assert attrs["security_groups"] == [SG_ID] and attrs["network_id"] == NET_ID
    assert attrs["status"] == "ACTIVE"


@pytest.mark.parametrize(("given", "sent"), [
    ({}, {}),                                                  # Neutron picks an address, default group
    ({"fixed_ips": []}, {}),                                   # an empty list is not sent (Heat's 1538473)
    ({"no_fixed_ips": True}, {"fixed_ips": []}),
    ({"security_groups": []}, {"security_groups": []}),        # no group at all
    ({"mac_address": "fa:16:3e:00:00:09"}, {"mac_address": "fa:16:3e:00:00:09"}),
])
def test_create_request_variants(given: dict[str, Any], sent: dict[str, Any]) -> None:
    result = PORT.start(Action.CREATE, ctx_for(_props(**given)))
    body = call_of(result, "create_port").kwargs
    assert {k: v for k, v in body.items() if k in ("fixed_ips", "security_groups", "mac_address")} == sent


@pytest.mark.parametrize(("change", "replace"), [
    ({"name": "x"}, False), ({"fixed_ips": [{"ip_address": "10.0.0.9"}]}, False),
    ({"security_groups": [SG_ID]}, False), ({"admin_state_up": False}, False), ({"device_id": "d"}, False),
    ({"binding:vnic_type": "direct"}, False), ({"tags": ["a"]}, False),
    ({"network": "5f0a1c3e-8d2b-4b8e-9c1a-000000000000"}, True), ({"mac_address": "fa:16:3e:00:00:09"}, True),
])
def test_update_in_place_or_replace(change: dict[str, Any], replace: bool) -> None:
    assert PORT.needs_replace(_props(), _props(**change)) is replace


def test_replace_always_replaces_on_any_change() -> None:
    old = _props(replacement_policy="REPLACE_ALWAYS")
    assert PORT.needs_replace(old, _props(replacement_policy="REPLACE_ALWAYS", name="x")) is True


def test_update_removing_the_groups_goes_back_to_default() -> None:
    ctx = ctx_for(_props(), old_properties=_props(security_groups=[SG_ID]), physical_id=PORT_ID,
                  data={SHOW: "{}"})
    results, _ = run(PORT, Action.UPDATE, ctx, [{"find:security_group:default": ok({"id": DEFAULT_SG})},
                                                {"update": ok(_port("ACTIVE"))}])
    assert methods(results[0]) == ["find_security_group"]
    assert call_of(results[1], "update_port").kwargs == {"security_groups": [DEFAULT_SG]}
    assert isinstance(results[2], Done)


def test_update_fixed_ips_and_pairs() -> None:
    old = _props(fixed_ips=[{"ip_address": "10.0.0.5"}], allowed_address_pairs=[{"ip_address": "10.1.0.1"}])
    new = _props(fixed_ips=[{"subnet": SUB_ID, "ip_address": "10.0.0.7"}])
    result = PORT.start(Action.UPDATE, ctx_for(new, old_properties=old, physical_id=PORT_ID))
    assert call_of(result, "update_port").kwargs == {
        "fixed_ips": [{"subnet_id": SUB_ID, "ip_address": "10.0.0.7"}], "allowed_address_pairs": []}


def test_observe_leaves_out_what_nova_sets_and_what_was_given_by_name() -> None:
    props = _props(security_groups=["web"], device_id="")
    ctx = ctx_for(props, physical_id=PORT_ID)
    seen = PORT.observe(after(ctx, Done(), {OBSERVE_KEY: ok(_port("ACTIVE", device_id="server-1",
                                                                   device_owner="compute:nova"))}))
    assert seen is not None
    assert "device_id" not in seen.properties and "device_owner" not in seen.properties
    assert "security_groups" not in seen.properties          # ids, where the template gave a name
    by_id = PORT.observe(after(ctx_for(_props(security_groups=[SG_ID]), physical_id=PORT_ID), Done(),
                               {OBSERVE_KEY: ok(_port("ACTIVE"))}))
    assert by_id is not None and by_id.properties["security_groups"] == [SG_ID]


@pytest.mark.parametrize(("answer", "reason"), [
    (NOT_FOUND, "EntityNotFound: resources.r1: The Resource (web) could not be found."),
    (error(ErrorKind.BAD_REQUEST, "More than one SecurityGroup exists with the name 'web'.", None,
           "DuplicateResource"),
     "PhysicalResourceNameAmbiguity: resources.r1: Multiple physical resources were found with name (web)."),
])
def test_a_security_group_name_the_project_lacks_fails_as_heats(answer: Any, reason: str) -> None:
    # Heat lists the project's groups and matches the name itself (measured: clouds/create_failed).
    props = PORT.validate({"network": NET_ID, "security_groups": ["web"]}, resource_name="r1")
    results, _ = run(PORT, Action.CREATE, ctx_for(props), [{"find:security_group:web": answer}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "r1") == reason
