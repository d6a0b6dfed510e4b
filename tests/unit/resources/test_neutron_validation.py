"""A whole network template through the api's validation: properties checked, implicit orderings kept."""

from __future__ import annotations

from typing import Any

import pytest

from libs.resources.registry import default_registry
from libs.resources.validation import plugin_checks
from libs.template import errors
from libs.template.request import LoadedStack, StackRequest, load

REGISTRY = default_registry()
NETWORK_STACK: dict[str, Any] = {
    "net": {"type": "OS::Neutron::Net", "properties": {"name": {"get_param": "net_name"}}},
    "sub": {"type": "OS::Neutron::Subnet", "properties": {
        "network_id": {"get_resource": "net"}, "cidr": "10.20.0.0/24", "gateway_ip": "10.20.0.1",
        "allocation_pools": [{"start": "10.20.0.10", "end": "10.20.0.99"}]}},
    "router": {"type": "OS::Neutron::Router",
               "properties": {"external_gateway_info": {"network": {"get_param": "public"}}}},
    "ri": {"type": "OS::Neutron::RouterInterface", "properties": {
        "router_id": {"get_resource": "router"}, "subnet_id": {"get_resource": "sub"}}},
    "sg": {"type": "OS::Neutron::SecurityGroup", "properties": {"rules": [
        {"protocol": "tcp", "port_range_min": 22, "port_range_max": 22}, {"protocol": "icmp"}]}},
    "port": {"type": "OS::Neutron::Port", "properties": {
        "network_id": {"get_resource": "net"},
        "fixed_ips": [{"subnet_id": {"get_resource": "sub"}}],
        "security_groups": [{"get_resource": "sg"}]}},
    "fip": {"type": "OS::Neutron::FloatingIP", "properties": {
        "floating_network": {"get_param": "public"}, "port_id": {"get_resource": "port"}}},
}


def _load(resources: dict[str, Any]) -> LoadedStack:
    template = {"heat_template_version": "2013-05-23", "resources": resources,
                "parameters": {"public": {"type": "string", "default": "public"},
                               "net_name": {"type": "string", "default": "inner"}},
                "outputs": {"ip": {"value": {"get_attr": ["fip", "floating_ip_address"]}}}}
    return load(StackRequest(template=template, files={}, environment=None), stack_name="s",
                stack_id="i", project_id="p", builtin_types=REGISTRY.types(),
                checks=plugin_checks(REGISTRY))


def test_a_network_stack_validates_with_heats_orderings() -> None:
    loaded = _load(NETWORK_STACK)
    definition = loaded.definition
    assert definition.required("fip") == {"port", "router", "ri"}
    assert definition.required("port") == {"net", "sub", "sg"}
    order = definition.graph().topological_order()
    assert order.index("ri") < order.index("fip") and order.index("sub") < order.index("port")


@pytest.mark.parametrize(("resource", "properties", "message"), [
    ("sub", {"network": "n"},
     "At least one of the following properties must be specified: subnetpool, cidr."),
    ("ri", {"router": "r"}, "At least one of the following properties must be specified: subnet, port."),
    ("fip", {"floating_network": "public", "fixed_ip_address": "10.0.0.1"},
     "fixed_ip_address cannot be specified without port_id."),
    ("sg", {"name": "default"}, 'Security groups cannot be assigned the name "default".'),
    ("port", {"network": "n", "binding:vnic_type": "fancy"},
     'Property error: resources.port.properties.binding:vnic_type: "fancy" is not an allowed value '
     '["normal", "direct", "macvtap", "direct-physical", "baremetal", "virtio-forwarder", "smart-nic"]'),
])
def test_heats_refusals(resource: str, properties: dict[str, Any], message: str) -> None:
    changed = {"type": NETWORK_STACK[resource]["type"], "properties": properties}
    resources = {**NETWORK_STACK, resource: changed}
    with pytest.raises(errors.TemplateError) as failed:
        _load(resources)
    assert str(failed.value) == message
