"""Heat's implicit dependencies of Neutron types, as the planner's stack definition computes them."""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from typing import Any

import pytest

from libs.engine import desired
from libs.resources.neutron.dependencies import implicit_dependencies

NET = {"type": "OS::Neutron::Net"}


def _sub(network: Any, cidr: str = "10.0.0.0/24") -> dict[str, Any]:
    return {"type": "OS::Neutron::Subnet", "properties": {"network": network, "cidr": cidr}}


def _port(network: Any, **more: Any) -> dict[str, Any]:
    return {"type": "OS::Neutron::Port", "properties": {"network": network, **more}}


def _router(network: Any) -> dict[str, Any]:
    return {"type": "OS::Neutron::Router", "properties": {"external_gateway_info": {"network": network}}}


def _ri(subnet: Any) -> dict[str, Any]:
    return {"type": "OS::Neutron::RouterInterface",
            "properties": {"router": {"get_resource": "router"}, "subnet": subnet}}


def _fip(network: Any = "public", **more: Any) -> dict[str, Any]:
    return {"type": "OS::Neutron::FloatingIP", "properties": {"floating_network": network, **more}}


def _requires(resources: dict[str, Any]) -> dict[str, AbstractSet[str]]:
    template = {"heat_template_version": "2016-10-14",
                "parameters": {"pub": {"type": "string", "default": "public"}}, "resources": resources}
    return desired.load(template, {}, {}, stack_name="s", stack_id="x", project_id="p").requires()


REF = {"get_resource": "net"}


@pytest.mark.parametrize(("resources", "name", "expected"), [
    # A port comes after every subnet of its network, not those of other networks.
    ({"net": NET, "sub": _sub(REF), "sub2": _sub({"get_resource": "net2"}), "net2": NET,
      "port": _port(REF)}, "port", {"net", "sub"}),
    ({"sub": _sub("private"), "port": _port("private")}, "port", {"sub"}),
    ({"sub": _sub("private"), "port": _port("other")}, "port", set()),
    # A router after the subnets of its gateway's network (a parameter is its value).
    ({"sub": _sub("public", "172.24.4.0/24"), "router": _router({"get_param": "pub"})}, "router", {"sub"}),
    # A floating IP after the router with a gateway on its network...
    ({"router": _router("public"), "fip": _fip()}, "fip", {"router"}),
    ({"router": _router("other"), "fip": _fip()}, "fip", set()),
    # ...and after the interface on the subnet of its port.
    ({"net": NET, "sub": _sub(REF), "router": _router("public"), "ri": _ri({"get_resource": "sub"}),
      "port": _port(REF, fixed_ips=[{"subnet": {"get_resource": "sub"}}]),
      "fip": _fip(port_id={"get_resource": "port"})}, "fip", {"router", "ri", "port"}),
    # A port with no fixed IPs: its network's subnets decide (Heat asks Neutron).
    ({"net": NET, "sub": _sub(REF), "router": _router("elsewhere"), "ri": _ri({"get_resource": "sub"}),
      "port": _port(REF), "fip": _fip(port_id={"get_resource": "port"})}, "fip", {"ri", "port"}),
    # An association after the interface on its port's first subnet.
    ({"net": NET, "sub": _sub(REF), "router": _router("public"), "ri": _ri({"get_resource": "sub"}),
      "port": _port(REF, fixed_ips=[{"subnet": {"get_resource": "sub"}}]),
      "fip": _fip(), "assoc": {"type": "OS::Neutron::FloatingIPAssociation", "properties": {
          "floatingip_id": {"get_resource": "fip"}, "port_id": {"get_resource": "port"}}}},
     "assoc", {"fip", "port", "ri"}),
])
def test_implicit_dependencies(resources: dict[str, Any], name: str, expected: set[str]) -> None:
    assert _requires(resources)[name] == expected


def test_a_value_that_cannot_be_evaluated_adds_nothing() -> None:
    requires = _requires({"sub": _sub("private"), "port": _port({"get_param": "missing"})})
    assert requires["port"] == set()


def test_rules_see_only_the_stack() -> None:
    template = {"heat_template_version": "2016-10-14", "resources": {"sub": _sub("a"), "port": _port("a")}}
    stack = desired.load(template, {}, {}, stack_name="s", stack_id="x", project_id="p").definition
    assert implicit_dependencies(stack) == {"port": {"sub"}}
    assert stack.graph().topological_order() == ["sub", "port"]


def test_the_old_property_names_count_too() -> None:
    # The shape of heat-templates' servers_in_new_neutron_net.yaml: hidden *_id names throughout.
    requires = _requires({
        "net": {"type": "OS::Neutron::Net", "properties": {"name": "inner"}},
        "sub": {"type": "OS::Neutron::Subnet", "properties": {"network_id": REF, "cidr": "10.10.0.0/24"}},
        "router": _router({"get_param": "pub"}),
        "ri": {"type": "OS::Neutron::RouterInterface",
               "properties": {"router_id": {"get_resource": "router"}, "subnet_id": {"get_resource": "sub"}}},
        "port": {"type": "OS::Neutron::Port",
                 "properties": {"network_id": REF, "fixed_ips": [{"subnet_id": {"get_resource": "sub"}}]}},
        "fip": _fip({"get_param": "pub"}, port_id={"get_resource": "port"}),
    })
    assert requires["port"] == {"net", "sub"}
    assert requires["fip"] == {"port", "router", "ri"}
    assert requires["ri"] == {"router", "sub"}


def _server(*networks: dict[str, Any]) -> dict[str, Any]:
    return {"type": "OS::Nova::Server", "properties": {"image": "cirros", "flavor": "m1.tiny",
                                                      "networks": list(networks)}}


@pytest.mark.parametrize(("server", "expected"), [
    (_server({"network": REF}), {"net", "sub"}),
    (_server({"network": "private"}), {"sub2"}),
    (_server({"uuid": "private"}), {"sub2"}),                    # Heat's old key
    (_server({"port": "p-1"}), {"sub", "sub2"}),                 # a network not named: every subnet
    (_server(), set()),
])
def test_a_server_comes_after_its_networks_subnets(server: dict[str, Any], expected: set[str]) -> None:
    requires = _requires({"net": NET, "sub": _sub(REF), "sub2": _sub("private", "10.1.0.0/24"),
                          "server": server})
    assert requires["server"] == expected
