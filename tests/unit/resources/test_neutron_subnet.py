"""OS::Neutron::Subnet: Heat's validation rules, the create and update requests, attributes."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY
from libs.resources.neutron.base import SHOW
from libs.resources.steps import Done, Failed
from libs.template.errors import StackValidationFailed
from tests.unit.resources.cloud_support import TAG, after, call_of, ctx_for, methods, ok, run
from tests.unit.resources.resource_support import plugin

SUBNET = plugin("OS::Neutron::Subnet")
NAME = "st-r1-abcdefghijkl"
NET_ID = "5f0a1c3e-8d2b-4b8e-9c1a-0a1b2c3d4e5f"
SUB_ID = "0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"
BASE = {"network": NET_ID, "cidr": "10.0.0.0/24"}
SHOWN = {"id": SUB_ID, "name": NAME, "network_id": NET_ID, "cidr": "10.0.0.0/24", "gateway_ip": "10.0.0.1",
         "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.0.254"}], "host_routes": [],
         "dns_nameservers": [], "is_dhcp_enabled": True, "ip_version": 4, "project_id": "demo",
         "tags": [TAG]}


def _props(**given: Any) -> dict[str, Any]:
    # neutron.segment is not among the cloud constraints yet: a segment is set after validation.
    segment = given.pop("segment", None)
    return {**SUBNET.validate({**BASE, **given}, resource_name="r1"), "segment": segment}


@pytest.mark.parametrize(("name", "kind", "default", "update_allowed", "required"), [
    ("network", "string", None, False, True),
    ("subnetpool", "string", None, False, False),
    ("prefixlen", "integer", None, False, False),
    ("cidr", "string", None, False, False),
    ("value_specs", "map", {}, True, False),
    ("name", "string", None, True, False),
    ("ip_version", "integer", 4, False, False),
    ("dns_nameservers", "list", [], True, False),
    ("gateway_ip", "string", None, True, False),
    ("enable_dhcp", "boolean", True, True, False),
    ("allocation_pools", "list", None, True, False),
    ("tenant_id", "string", None, False, False),
    ("host_routes", "list", None, True, False),
    ("ipv6_ra_mode", "string", None, False, False),
    ("ipv6_address_mode", "string", None, False, False),
    ("segment", "string", None, True, False),
    ("tags", "list", None, True, False),
])
def test_schema(name: str, kind: str, default: Any, update_allowed: bool, required: bool) -> None:
    prop = SUBNET.properties_schema[name]
    assert (prop.type, prop.default, prop.update_allowed, prop.required) == (
        kind, default, update_allowed, required)
    assert SUBNET.properties_schema["network_id"].support_status == "HIDDEN"
    assert "network_id" not in SUBNET.schema_api()["properties"]


@pytest.mark.parametrize(("given", "message"), [
    ({"network": NET_ID}, "At least one of the following properties must be specified: subnetpool, cidr."),
    ({"subnetpool": "pool"}, "Cannot define the following properties at the same time: subnetpool, cidr."),
    ({"prefixlen": 26}, "Cannot define the following properties at the same time: prefixlen, cidr."),
    ({"ipv6_ra_mode": "slaac"}, "ipv6_ra_mode and ipv6_address_mode are not supported for ipv4."),
    ({"ip_version": 6, "cidr": "fd00::/64", "ipv6_ra_mode": "slaac", "ipv6_address_mode": "dhcpv6-stateful"},
     "When both ipv6_ra_mode and ipv6_address_mode are set, they must be equal."),
    ({"gateway_ip": "10.0.0.300"}, 'Gateway IP address "10.0.0.300" is in invalid format.'),
])
def test_validation(given: dict[str, Any], message: str) -> None:
    values = {**BASE, **given} if "network" not in given else given
    with pytest.raises(StackValidationFailed) as failed:
        SUBNET.validate(values, resource_name="r1")
    assert str(failed.value) == message


@pytest.mark.parametrize("gateway", ["auto", "", "10.0.0.1"])
def test_gateway_values_pass_validation(gateway: str) -> None:
    assert _props(gateway_ip=gateway)["gateway_ip"] == gateway


def test_the_hidden_network_id_stands_for_network() -> None:
    props = SUBNET.validate({"network_id": NET_ID, "cidr": "10.0.0.0/24"}, resource_name="r1")
    assert props["network"] == NET_ID


@pytest.mark.parametrize(("gateway", "sent"), [
    (None, {}),                        # left out: Neutron takes the first free address
    ("auto", {}),
    ("", {"gateway_ip": None}),        # null in the template: no gateway
    ("10.0.0.9", {"gateway_ip": "10.0.0.9"}),
])
def test_create_request(gateway: str | None, sent: dict[str, Any]) -> None:
    props = _props(**({} if gateway is None else {"gateway_ip": gateway}))
    result = SUBNET.start(Action.CREATE, ctx_for(props))
    assert call_of(result, "create_subnet").kwargs == {
        "name": NAME, "network_id": NET_ID, "cidr": "10.0.0.0/24", "ip_version": 4, "dns_nameservers": [],
        "enable_dhcp": True, "description": TAG, **sent}


def test_create_looks_up_the_network_by_name_and_completes_without_status() -> None:
    props = SUBNET.validate({"network": "private", "cidr": "10.0.0.0/24",
                             "allocation_pools": [{"start": "10.0.0.10", "end": "10.0.0.20"}],
                             "host_routes": [{"destination": "10.1.0.0/16", "nexthop": "10.0.0.1"}],
                             "value_specs": {"service_types": []}}, resource_name="r1")
    results, final = run(SUBNET, Action.CREATE, ctx_for(props), [
        {"find:network:private": ok({"id": NET_ID})}, {"create": ok(SHOWN)}, {"tags": ok(None)}])
    assert methods(results[0]) == ["find_network"]
    body = call_of(results[1], "create_subnet").kwargs
    assert body["network_id"] == NET_ID and body["service_types"] == []
    assert body["allocation_pools"] == [{"start": "10.0.0.10", "end": "10.0.0.20"}]
    assert body["host_routes"] == [{"destination": "10.1.0.0/16", "nexthop": "10.0.0.1"}]
    assert call_of(results[2], "set_tags").args == ({"$existing": "network.v2.subnet.Subnet", "id": SUB_ID},
                                                     [TAG])
    assert isinstance(results[3], Done) and results[3].physical_id == SUB_ID
    attrs = SUBNET.all_attributes(SUB_ID, final.data, props)
    assert attrs == {"name": NAME, "network_id": NET_ID, "tenant_id": "demo",
                     "allocation_pools": [{"start": "10.0.0.2", "end": "10.0.0.254"}],
                     "gateway_ip": "10.0.0.1",
                     "host_routes": [], "ip_version": 4, "cidr": "10.0.0.0/24", "dns_nameservers": [],
                     "enable_dhcp": True}


@pytest.mark.parametrize(("change", "replace"), [
    ({"name": "x"}, False), ({"dns_nameservers": ["8.8.8.8"]}, False), ({"gateway_ip": "10.0.0.5"}, False),
    ({"enable_dhcp": False}, False),
    ({"allocation_pools": [{"start": "10.0.0.5", "end": "10.0.0.6"}]}, False),
    ({"host_routes": []}, False), ({"segment": "seg"}, False), ({"tags": ["t"]}, False),
    ({"cidr": "10.0.1.0/24"}, True), ({"ip_version": 6, "cidr": "fd00::/64"}, True),
    ({"network": "other"}, True), ({"tenant_id": "x"}, True),
])
def test_update_in_place_or_replace(change: dict[str, Any], replace: bool) -> None:
    assert SUBNET.needs_replace(_props(), _props(**change)) is replace


@pytest.mark.parametrize(("old", "new", "sent"), [
    ({"gateway_ip": "10.0.0.1"}, {}, {"gateway_ip": None}),      # removed: the gateway is detached
    ({}, {"gateway_ip": ""}, {"gateway_ip": None}),
    ({}, {"gateway_ip": "10.0.0.7"}, {"gateway_ip": "10.0.0.7"}),
    ({"allocation_pools": [{"start": "10.0.0.5", "end": "10.0.0.6"}]}, {}, {"allocation_pools": []}),
    ({}, {"dns_nameservers": ["1.1.1.1"], "enable_dhcp": False},
     {"dns_nameservers": ["1.1.1.1"], "enable_dhcp": False}),
    ({}, {"segment": "seg-1"}, {"segment_id": "seg-1"}),
])
def test_update_request(old: dict[str, Any], new: dict[str, Any], sent: dict[str, Any]) -> None:
    ctx = ctx_for(_props(**new), old_properties=_props(**old), physical_id=SUB_ID, data={SHOW: "{}"})
    results, _ = run(SUBNET, Action.UPDATE, ctx, [{"update": ok(SHOWN)}])
    assert call_of(results[0], "update_subnet").args == (SUB_ID,)
    assert call_of(results[0], "update_subnet").kwargs == sent
    assert isinstance(results[1], Done)


def test_update_refusals_are_heats() -> None:
    ctx = ctx_for(_props(gateway_ip="auto"), old_properties=_props(), physical_id=SUB_ID)
    result = SUBNET.start(Action.UPDATE, ctx)
    assert isinstance(result, Failed) and result.error == "ResourceActionNotSupported"
    assert result.message.startswith('The value "auto" for gateway_ip cannot be used to update')
    ctx = ctx_for(_props(segment="b"), old_properties=_props(segment="a"), physical_id=SUB_ID)
    result = SUBNET.start(Action.UPDATE, ctx)
    assert isinstance(result, Failed) and result.error == "ResourceActionNotSupported"


def test_delete() -> None:
    results, _ = run(SUBNET, Action.DELETE, ctx_for(_props(), physical_id=SUB_ID), [{"delete": ok(None)}])
    assert methods(results[0]) == ["delete_subnet"] and isinstance(results[1], Done)


def test_observe_leaves_what_neutron_chose() -> None:
    ctx = ctx_for(_props(dns_nameservers=["1.1.1.1"]), physical_id=SUB_ID)
    seen = SUBNET.observe(after(ctx, Done(), {OBSERVE_KEY: ok({**SHOWN, "dns_nameservers": []})}))
    # The pools and gateway Neutron chose are not changes to converge back to "unset".
    assert seen is not None and seen.properties == {"dns_nameservers": [], "enable_dhcp": True}
