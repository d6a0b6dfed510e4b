"""OS::Neutron::Router and OS::Neutron::RouterInterface as steps."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.neutron.router_interface import parse_id
from libs.resources.steps import Call, Done, Failed
from libs.template.errors import StackValidationFailed
from tests.unit.resources.cloud_support import NOT_FOUND, TAG, call_of, ctx_for, error, methods, ok, run
from tests.unit.resources.resource_support import plugin

ROUTER = plugin("OS::Neutron::Router")
INTERFACE = plugin("OS::Neutron::RouterInterface")
NAME = "st-r1-abcdefghijkl"
PUBLIC_ID = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
ROUTER_ID = "4d5e6f7a-8b9c-4d0e-9f1a-2b3c4d5e6f7a"
SUB_ID = "0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e"
PORT_ID = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
GATEWAY = {"network_id": PUBLIC_ID, "enable_snat": True,
           "external_fixed_ips": [{"subnet_id": SUB_ID, "ip_address": "172.24.4.10"}]}


def _router(status: str = "ACTIVE", **extra: Any) -> dict[str, Any]:
    return {"id": ROUTER_ID, "name": NAME, "status": status, "external_gateway_info": GATEWAY,
            "is_admin_state_up": True, "project_id": "demo", "tags": [TAG], **extra}


@pytest.mark.parametrize(("name", "kind", "default", "update_allowed"), [
    ("name", "string", None, True), ("external_gateway_info", "map", None, True),
    ("value_specs", "map", {}, True), ("admin_state_up", "boolean", True, True),
    ("l3_agent_id", "string", None, True), ("l3_agent_ids", "list", None, True),
    ("distributed", "boolean", None, False), ("ha", "boolean", None, False),
    ("availability_zone_hints", "list", None, True), ("tags", "list", None, True),
    ("tenant_id", "string", None, False),
])
def test_router_schema(name: str, kind: str, default: Any, update_allowed: bool) -> None:
    prop = ROUTER.properties_schema[name]
    assert (prop.type, prop.default, prop.update_allowed) == (kind, default, update_allowed)
    assert list(ROUTER.attributes_schema) == ["status", "external_gateway_info", "name", "admin_state_up",
                                              "tenant_id"]


@pytest.mark.parametrize(("given", "message"), [
    ({"l3_agent_id": "a", "l3_agent_ids": ["b"]},
     "Cannot define the following properties at the same time: l3_agent_id, l3_agent_ids."),
    ({"distributed": True, "l3_agent_ids": ["b"]},
     "Cannot define the following properties at the same time: distributed, l3_agent_id/l3_agent_ids."),
    ({"distributed": True, "ha": True},
     "Cannot define the following properties at the same time: distributed, ha."),
    ({"l3_agent_ids": ["a", "b"]}, "Non HA routers can only have one L3 agent."),
])
def test_router_validation(given: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as failed:
        ROUTER.validate(given, resource_name="r1")
    assert str(failed.value) == message


def test_old_agent_joins_the_list() -> None:
    props = ROUTER.validate({"l3_agent_id": "a"}, resource_name="r1")
    assert props["l3_agent_ids"] == ["a"] and props["l3_agent_id"] is None


def test_router_create_with_a_gateway_by_name() -> None:
    props = ROUTER.validate({"external_gateway_info": {
        "network": "public", "enable_snat": True,
        "external_fixed_ips": [{"subnet": "public-subnet", "ip_address": "172.24.4.10"}]}},
        resource_name="r1")
    results, final = run(ROUTER, Action.CREATE, ctx_for(props), [
        {"find:network:public": ok({"id": PUBLIC_ID}), "find:subnet:public-subnet": ok({"id": SUB_ID})},
        {"create": ok(_router("BUILD"))}, {"tags": ok(None)}, {"get": ok(_router())}])
    assert methods(results[0]) == ["find_network", "find_subnet"]
    assert call_of(results[1], "create_router").kwargs == {
        "name": NAME, "admin_state_up": True, "external_gateway_info": GATEWAY, "description": TAG}
    assert call_of(results[2], "set_tags").args[1] == [TAG]
    assert isinstance(results[4], Done)
    assert ROUTER.attribute("external_gateway_info", ROUTER_ID, final.data, props) == GATEWAY


def test_router_gateway_only_what_was_given() -> None:
    props = ROUTER.validate({"external_gateway_info": {"network": PUBLIC_ID}}, resource_name="r1")
    result = ROUTER.start(Action.CREATE, ctx_for(props))
    assert call_of(result, "create_router").kwargs["external_gateway_info"] == {"network_id": PUBLIC_ID}


@pytest.mark.parametrize(("old", "new", "sent"), [
    ({"external_gateway_info": {"network": PUBLIC_ID}}, {}, {"external_gateway_info": None}),
    ({}, {"external_gateway_info": {"network": PUBLIC_ID, "enable_snat": False}},
     {"external_gateway_info": {"network_id": PUBLIC_ID, "enable_snat": False}}),
    ({}, {"admin_state_up": False, "name": "edge"}, {"admin_state_up": False, "name": "edge"}),
])
def test_router_update(old: dict[str, Any], new: dict[str, Any], sent: dict[str, Any]) -> None:
    ctx = ctx_for(ROUTER.validate(new, resource_name="r1"),
                  old_properties=ROUTER.validate(old, resource_name="r1"), physical_id=ROUTER_ID)
    results, _ = run(ROUTER, Action.UPDATE, ctx, [{"update": ok(_router())}])
    assert call_of(results[0], "update_router").kwargs == sent
    assert isinstance(results[1], Done)


@pytest.mark.parametrize(("change", "replace"), [
    ({"external_gateway_info": {"network": PUBLIC_ID}}, False), ({"admin_state_up": False}, False),
    ({"distributed": True}, True), ({"ha": True}, True), ({"tenant_id": "x"}, True),
])
def test_router_update_or_replace(change: dict[str, Any], replace: bool) -> None:
    base = ROUTER.validate({}, resource_name="r1")
    assert ROUTER.needs_replace(base, ROUTER.validate(change, resource_name="r1")) is replace


# ---- RouterInterface ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("given", "message"), [
    ({"router": ROUTER_ID}, "At least one of the following properties must be specified: subnet, port."),
    ({"router": ROUTER_ID, "subnet": SUB_ID, "port": PORT_ID},
     "Cannot define the following properties at the same time: subnet, port."),
])
def test_interface_validation(given: dict[str, Any], message: str) -> None:
    with pytest.raises(StackValidationFailed) as failed:
        INTERFACE.validate(given, resource_name="r1")
    assert str(failed.value) == message


def test_interface_old_names_and_ids() -> None:
    props = INTERFACE.validate({"router_id": ROUTER_ID, "subnet_id": SUB_ID}, resource_name="r1")
    assert (props["router"], props["subnet"]) == (ROUTER_ID, SUB_ID)
    assert parse_id(f"{ROUTER_ID}:subnet_id={SUB_ID}") == (ROUTER_ID, "subnet_id", SUB_ID)
    assert parse_id(f"{ROUTER_ID}:port_id={PORT_ID}") == (ROUTER_ID, "port_id", PORT_ID)
    assert parse_id(f"{ROUTER_ID}:{SUB_ID}") == (ROUTER_ID, "subnet_id", SUB_ID)  # Heat's old form


def test_interface_add_records_the_id_first() -> None:
    props = INTERFACE.validate({"router": "edge", "subnet": SUB_ID}, resource_name="r1")
    results, final = run(INTERFACE, Action.CREATE, ctx_for(props), [
        {"find:router:edge": ok({"id": ROUTER_ID})}, {"add": ok({"id": ROUTER_ID, "port_id": PORT_ID})}])
    assert methods(results[0]) == ["find_router"]
    add = results[1]
    assert isinstance(add, Call) and add.physical_id == f"{ROUTER_ID}:subnet_id={SUB_ID}"
    assert call_of(add, "add_interface_to_router").args == (ROUTER_ID,)
    assert call_of(add, "add_interface_to_router").kwargs == {"subnet": SUB_ID}
    assert isinstance(results[2], Done)
    assert INTERFACE.reference_id(final.physical_id, final.data, resource_name="r1") == final.physical_id


@pytest.mark.parametrize(("listed", "next_method"), [
    ([{"id": "p9", "fixed_ips": [{"subnet_id": SUB_ID, "ip_address": "10.0.0.1"}]}], None),   # it was added
    ([{"id": "p9", "fixed_ips": [{"subnet_id": "other", "ip_address": "10.1.0.1"}]}],
     "add_interface_to_router"),
])
def test_interface_lost_add_checks_the_routers_ports(listed: list[Any], next_method: str | None) -> None:
    props = INTERFACE.validate({"router": ROUTER_ID, "subnet": SUB_ID}, resource_name="r1")
    results, _ = run(INTERFACE, Action.CREATE, ctx_for(props), [None, {"ports": ok(listed)}])
    assert methods(results[1]) == ["ports"]
    assert call_of(results[1], "ports").kwargs == {"device_id": ROUTER_ID}
    if next_method is None:
        assert isinstance(results[2], Done)
    else:
        assert methods(results[2]) == [next_method]


def test_interface_on_a_port() -> None:
    props = INTERFACE.validate({"router": ROUTER_ID, "port": PORT_ID}, resource_name="r1")
    results, _ = run(INTERFACE, Action.CREATE, ctx_for(props), [None, {"ports": ok([{"id": PORT_ID}])}])
    assert call_of(results[0], "add_interface_to_router").kwargs == {"port": PORT_ID}
    assert isinstance(results[2], Done)


def test_interface_add_refused_fails() -> None:
    props = INTERFACE.validate({"router": ROUTER_ID, "subnet": SUB_ID}, resource_name="r1")
    refused = error(ErrorKind.BAD_REQUEST, "Router already has a port on subnet", 400, "BadRequestException")
    results, _ = run(INTERFACE, Action.CREATE, ctx_for(props), [{"add": refused}])
    assert results[1] == Failed("Router already has a port on subnet", "BadRequest")


@pytest.mark.parametrize("answer", [ok({}), NOT_FOUND])
def test_interface_remove(answer: Any) -> None:
    props = INTERFACE.validate({"router": ROUTER_ID, "subnet": SUB_ID}, resource_name="r1")
    ctx = ctx_for(props, physical_id=f"{ROUTER_ID}:subnet_id={SUB_ID}")
    results, _ = run(INTERFACE, Action.DELETE, ctx, [None, {"remove": answer}])
    assert call_of(results[0], "remove_interface_from_router").args == (ROUTER_ID,)
    assert call_of(results[0], "remove_interface_from_router").kwargs == {"subnet": SUB_ID}
    assert methods(results[1]) == ["remove_interface_from_router"]  # the answer was lost: again
    assert isinstance(results[2], Done)
    assert isinstance(INTERFACE.start(Action.DELETE, ctx_for(props)), Done)  # never added
