"""OS::Neutron::FloatingIP and OS::Neutron::FloatingIPAssociation as steps."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.steps import Call, Done, Failed
from libs.template.errors import StackValidationFailed
from tests.unit.resources.cloud_support import NOT_FOUND, TAG, call_of, ctx_for, error, methods, ok, run
from tests.unit.resources.resource_support import plugin

FIP = plugin("OS::Neutron::FloatingIP")
ASSOCIATION = plugin("OS::Neutron::FloatingIPAssociation")
PUBLIC_ID = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
PORT_ID = "2b3c4d5e-6f7a-4b8c-9d0e-1f2a3b4c5d6e"
FIP_ID = "6f7a8b9c-0d1e-4f2a-8b3c-4d5e6f7a8b9c"
OTHER_FIP = "7a8b9c0d-1e2f-4a3b-9c4d-5e6f7a8b9c0d"
SHOWN = {"id": FIP_ID, "floating_ip_address": "172.24.4.20", "floating_network_id": PUBLIC_ID,
         "port_id": PORT_ID, "fixed_ip_address": "10.0.0.5", "router_id": "r", "project_id": "demo",
         "status": "DOWN", "tags": [TAG]}


def test_schema() -> None:
    assert {n: (p.type, p.update_allowed, p.required) for n, p in FIP.properties_schema.items()} == {
        "floating_network_id": ("string", False, False), "floating_network": ("string", False, True),
        "floating_subnet": ("string", False, False), "value_specs": ("map", False, False),
        "port_id": ("string", True, False), "fixed_ip_address": ("string", True, False),
        "floating_ip_address": ("string", False, False), "dns_name": ("string", True, False),
        "dns_domain": ("string", True, False)}
    assert list(FIP.attributes_schema) == ["router_id", "tenant_id", "floating_network_id",
                                           "fixed_ip_address", "floating_ip_address", "port_id"]
    assert {n: (p.update_allowed, p.required) for n, p in ASSOCIATION.properties_schema.items()} == {
        "floatingip_id": (True, True), "port_id": (True, True), "fixed_ip_address": (True, False)}


def test_a_fixed_address_needs_a_port() -> None:
    with pytest.raises(StackValidationFailed) as failed:
        FIP.validate({"floating_network": "public", "fixed_ip_address": "10.0.0.5"}, resource_name="r1")
    assert str(failed.value) == "fixed_ip_address cannot be specified without port_id."


def test_create_from_the_public_network_by_name() -> None:
    props = FIP.validate({"floating_network": "public", "port_id": PORT_ID}, resource_name="r1")
    results, final = run(FIP, Action.CREATE, ctx_for(props), [
        {"find:network:public": ok({"id": PUBLIC_ID})}, {"create": ok(SHOWN)}, {"tags": ok(None)}])
    assert methods(results[0]) == ["find_network"]
    # No name to find it by after a crash: Ember's tag goes in its description too.
    assert call_of(results[1], "create_ip").kwargs == {"floating_network_id": PUBLIC_ID, "port_id": PORT_ID,
                                                       "description": TAG}
    assert isinstance(results[3], Done) and results[3].physical_id == FIP_ID  # DOWN is no wait: no status
    attrs = FIP.all_attributes(FIP_ID, final.data, props)
    assert attrs == {"router_id": "r", "tenant_id": "demo", "floating_network_id": PUBLIC_ID,
                     "fixed_ip_address": "10.0.0.5", "floating_ip_address": "172.24.4.20", "port_id": PORT_ID}


def test_lost_create_adopts_by_tag() -> None:
    props = FIP.validate({"floating_network": PUBLIC_ID}, resource_name="r1")
    results, _ = run(FIP, Action.CREATE, ctx_for(props), [None, {"adopt": ok([]),
                                                                 "adopt_named": ok([{**SHOWN, "tags": []}])},
                                                          {"tags": ok(None)}])
    listings = results[1]
    assert isinstance(listings, Call)
    assert [c.kwargs for c in listings.calls] == [{"tags": TAG}, {"description": TAG}]
    assert methods(results[2]) == ["set_tags"]
    assert isinstance(results[3], Done) and results[3].physical_id == FIP_ID


@pytest.mark.parametrize(("change", "replace"), [
    ({"port_id": "p2"}, False), ({"fixed_ip_address": "10.0.0.6"}, False), ({"dns_name": "web"}, False),
    ({"floating_network": "other"}, True), ({"floating_ip_address": "172.24.4.9"}, True),
    ({"value_specs": {"a": 1}}, True),
])
def test_update_or_replace(change: dict[str, Any], replace: bool) -> None:
    base = {"floating_network": PUBLIC_ID, "port_id": PORT_ID}
    old = FIP.validate(base, resource_name="r1")
    assert FIP.needs_replace(old, FIP.validate({**base, **change}, resource_name="r1")) is replace


def test_update_sends_port_and_address() -> None:
    old = FIP.validate({"floating_network": PUBLIC_ID, "port_id": PORT_ID}, resource_name="r1")
    new = FIP.validate({"floating_network": PUBLIC_ID}, resource_name="r1")
    results, _ = run(FIP, Action.UPDATE, ctx_for(new, old_properties=old, physical_id=FIP_ID),
                     [{"update": ok({**SHOWN, "port_id": None})}])
    assert call_of(results[0], "update_ip").args == (FIP_ID,)
    assert call_of(results[0], "update_ip").kwargs == {"port_id": None, "fixed_ip_address": None}
    assert isinstance(results[1], Done)


# ---- FloatingIPAssociation --------------------------------------------------------------------------

def _assoc(**given: Any) -> dict[str, Any]:
    return ASSOCIATION.validate({"floatingip_id": FIP_ID, "port_id": PORT_ID, **given}, resource_name="r1")


def test_associate_and_retry_a_lost_answer() -> None:
    results, final = run(ASSOCIATION, Action.CREATE, ctx_for(_assoc()), [None, {"associate": ok(SHOWN)}])
    first = results[0]
    assert isinstance(first, Call) and first.physical_id == "st-r1-abcdefghijkl"
    assert call_of(first, "update_ip").args == (FIP_ID,)
    assert call_of(first, "update_ip").kwargs == {"port_id": PORT_ID, "fixed_ip_address": None}
    assert methods(results[1]) == ["update_ip"]
    assert isinstance(results[2], Done)
    assert ASSOCIATION.reference_id(final.physical_id, final.data, resource_name="r1") == final.physical_id


def test_associate_refused_fails() -> None:
    refused = error(ErrorKind.NOT_FOUND, "External network is not reachable from subnet", 404,
                    "NotFoundException")
    results, _ = run(ASSOCIATION, Action.CREATE, ctx_for(_assoc()), [{"associate": refused}])
    assert results[1] == Failed("External network is not reachable from subnet", "NotFound")


@pytest.mark.parametrize("answer", [ok(SHOWN), NOT_FOUND])
def test_dissociate_on_delete(answer: Any) -> None:
    ctx = ctx_for(_assoc(), physical_id="st-r1-abcdefghijkl")
    results, _ = run(ASSOCIATION, Action.DELETE, ctx, [{"dissociate": answer}])
    assert call_of(results[0], "update_ip").kwargs == {"port_id": None}
    assert isinstance(results[1], Done)


def test_moving_to_another_floating_ip_takes_the_old_one_off_first() -> None:
    ctx = ctx_for(_assoc(floatingip_id=OTHER_FIP), old_properties=_assoc(), physical_id="x")
    results, _ = run(ASSOCIATION, Action.UPDATE, ctx, [{"dissociate": NOT_FOUND}, {"associate": ok(SHOWN)}])
    assert call_of(results[0], "update_ip").args == (FIP_ID,)
    assert call_of(results[1], "update_ip").args == (OTHER_FIP,)
    assert isinstance(results[2], Done)
