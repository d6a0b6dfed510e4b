"""The orderings Heat's Neutron types add to a stack's dependencies (their ``add_dependencies``).

- A port comes after every subnet of the stack on the same network: which subnet it
  takes an address from is not known, so all of them are made first.
- A router with a gateway comes after the subnets of the gateway's network.
- A floating IP comes after a router whose gateway is on its floating network (so the
  address can be routed), and after a router interface on the subnet of a port it
  depends on (Neutron needs that interface to put the address on the port).
- A floating IP association comes after a router interface on the subnet of the
  first fixed IP of a port it depends on.
- A server with networks comes after the subnets of those networks, after every subnet
  when one of its networks is not named (a port only), and after a subnet whose network
  cannot be known (Heat's ``Server.add_dependencies``: the rule is about subnets, so here).

Values are compared as the template gives them, functions evaluated where they can
be: a parameter gives its value, ``get_resource``/``get_attr`` give a token naming
what they read, so two ``{get_resource: net}`` are the same network and a literal
``public`` matches ``public``. A value that fails to evaluate adds nothing (Heat
leaves such errors to validation). Where Heat asks Neutron (a port with no fixed
IPs, on a network not made by the stack), Ember, having no cloud here, adds nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from libs.template.functions import base
from libs.template.stack import ConditionResolver, StackDefinition

NET, SUBNET, PORT = "OS::Neutron::Net", "OS::Neutron::Subnet", "OS::Neutron::Port"
ROUTER, INTERFACE = "OS::Neutron::Router", "OS::Neutron::RouterInterface"
FLOATING_IP, ASSOCIATION = "OS::Neutron::FloatingIP", "OS::Neutron::FloatingIPAssociation"
SERVER = "OS::Nova::Server"
# The types these rules order: a resource of any other type gains no implicit dependency.
RULED = frozenset({NET, SUBNET, PORT, ROUTER, INTERFACE, FLOATING_IP, ASSOCIATION, SERVER})


class _Tokens(ConditionResolver):
    """Parameters and conditions as they are; resources as tokens naming what is read."""

    def reference(self, resource: str) -> Any:
        return f"\x00resource:{resource}"

    def attribute(self, resource: str, attribute: str, path: Any) -> Any:
        return f"\x00attr:{resource}:{attribute}:{list(path or ())}"

    def all_attributes(self, resource: str) -> dict[str, Any]:
        return {}


class _Stack:
    """The stack's resources by type, and their property values as far as they can be known."""

    def __init__(self, stack: StackDefinition) -> None:
        self.stack = stack
        self.resolver = _Tokens(stack.parameters, stack.conditions)
        # Only the types with rules, found from the types as written (parsing only their resources):
        # a worker stepping one of 10^5 group members does not parse the 10^5.
        self.by_type: dict[str, list[str]] = defaultdict(list)
        for name, type_name in stack.written_types():
            if isinstance(type_name, str) and type_name in RULED and name in stack.resources:
                self.by_type[type_name].append(name)

    def value(self, name: str, *keys: str) -> Any:
        """The first of ``keys`` the resource's properties give a value for (None: none, or unknowable)."""
        props = self.stack.resources[name].properties
        if not isinstance(props, Mapping):
            return None
        for key in keys:
            if props.get(key) is None:
                continue
            try:
                value = base.resolve(props[key], self.resolver)
            except Exception:  # any failure is validation's to report, as in Heat
                return None
            if value is not None:
                return value
        return None

    def direct(self, name: str) -> set[str]:
        """What the template says the resource depends on (references and depends_on)."""
        definition = self.stack.resources[name]
        found = {ref.resource for ref in definition.references()} | set(definition.depends_on)
        return found & set(self.stack.resources)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else repr(value)


def _fixed_ip_subnets(stack: _Stack, port: str) -> list[Any] | None:
    fixed = stack.value(port, "fixed_ips")
    if not isinstance(fixed, list):
        return None
    return [ip.get("subnet") or ip.get("subnet_id") for ip in fixed if isinstance(ip, Mapping)]


def implicit_dependencies(stack: StackDefinition) -> dict[str, set[str]]:
    """Each Neutron resource with the other resources its type makes it come after."""
    s = _Stack(stack)
    deps: dict[str, set[str]] = defaultdict(set)
    subnets_of: dict[Any, set[str]] = defaultdict(set)
    for subnet in s.by_type[SUBNET]:
        network = s.value(subnet, "network", "network_id")
        if network is not None:
            subnets_of[_hashable(network)].add(subnet)
    for port in s.by_type[PORT]:
        network = s.value(port, "network", "network_id")
        if network is not None:
            deps[port] |= subnets_of.get(_hashable(network), set())
    gateways: dict[str, Any] = {}
    for router in s.by_type[ROUTER]:
        gateway = s.value(router, "external_gateway_info")
        if isinstance(gateway, Mapping) and gateway.get("network") is not None:
            gateways[router] = _hashable(gateway["network"])
            deps[router] |= subnets_of.get(gateways[router], set())
    interfaces = {i: s.value(i, "subnet", "subnet_id") for i in s.by_type[INTERFACE]}
    for fip in s.by_type[FLOATING_IP]:
        network = s.value(fip, "floating_network", "floating_network_id")
        if network is not None:
            deps[fip] |= {r for r, net in gateways.items() if net == _hashable(network)}
        deps[fip] |= _interfaces_for(s, fip, interfaces, first_only=False)
    for association in s.by_type[ASSOCIATION]:
        deps[association] |= _interfaces_for(s, association, interfaces, first_only=True)
    for server in s.by_type[SERVER]:
        deps[server] |= _server_subnets(s, server)
    return {name: found for name, found in deps.items() if found}


def _server_subnets(s: _Stack, server: str) -> set[str]:
    networks = s.value(server, "networks")
    if not isinstance(networks, list) or not networks:
        return set()
    named = [n.get("network") or n.get("uuid") for n in networks if isinstance(n, Mapping)]
    found: set[str] = set()
    for subnet in s.by_type[SUBNET]:
        network = s.value(subnet, "network", "network_id")
        if network is None or any(not n or _hashable(n) == _hashable(network) for n in named):
            found.add(subnet)
    return found


def _interfaces_for(s: _Stack, name: str, interfaces: Mapping[str, Any], *, first_only: bool) -> set[str]:
    """The router interfaces on the subnet of a port ``name`` depends on."""
    ports = [d for d in s.direct(name) if s.stack.resources[d].type == PORT]
    found: set[str] = set()
    for interface, subnet in interfaces.items():
        if any(_port_on_subnet(s, port, subnet, first_only=first_only) for port in ports):
            found.add(interface)
    return found


def _port_on_subnet(s: _Stack, port: str, subnet: Any, *, first_only: bool) -> bool:
    subnets = _fixed_ip_subnets(s, port)
    if not subnets:
        # Heat: a port with no fixed IPs is on every interface without a subnet; with one, Heat
        # asks Neutron for the port's network's subnets. The stack's own subnets answer that here.
        if first_only:
            return False
        if subnet is None:
            return True
        network = s.value(port, "network", "network_id")
        return network is not None and any(
            _hashable(s.value(own, "network", "network_id")) == _hashable(network)
            for own in _subnets_named(s, subnet))
    candidates: Iterable[Any] = subnets[:1] if first_only else subnets
    return any(_hashable(c) == _hashable(subnet) for c in candidates)


def _subnets_named(s: _Stack, subnet: Any) -> list[str]:
    """The stack's subnets a value names: ``{get_resource: sub}`` names ``sub``."""
    token = "\x00resource:"
    if isinstance(subnet, str) and subnet.startswith(token):
        name = subnet[len(token):]
        return [name] if name in s.by_type[SUBNET] else []
    return []
