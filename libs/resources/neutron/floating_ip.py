"""``OS::Neutron::FloatingIP``: an address of an external network, optionally on a port at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.neutron.base import Entity, NeutronResource, given
from libs.resources.neutron.errors import PropertyDependency
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Failed, StepContext
from libs.template.constraints import CustomConstraint

FLOATING_NETWORK_ID = "floating_network_id"
FLOATING_NETWORK = "floating_network"
FLOATING_SUBNET = "floating_subnet"
VALUE_SPECS = "value_specs"
PORT_ID = "port_id"
FIXED_IP_ADDRESS = "fixed_ip_address"
FLOATING_IP_ADDRESS = "floating_ip_address"
DNS_NAME = "dns_name"
DNS_DOMAIN = "dns_domain"


class FloatingIP(NeutronResource):
    """A floating IP: a public address that can follow an instance from port to port."""

    type_name: ClassVar[str] = "OS::Neutron::FloatingIP"
    renamed_properties: ClassVar[Mapping[str, str]] = {FLOATING_NETWORK_ID: FLOATING_NETWORK}
    description: ClassVar[str] = (
        "A floating IP: an address of an external network that can be moved between ports, so an "
        "instance keeps a public address across replacements.")
    entity: ClassVar[Entity] = Entity("ip", "ips", tag_class="network.v2.floating_ip.FloatingIP")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        FLOATING_NETWORK_ID: PropSchema("string", constraints=(CustomConstraint("neutron.network"),),
                                        support_status="HIDDEN"),
        FLOATING_NETWORK: PropSchema("string", "The network to take the address from, by name or id.",
                                     required=True, constraints=(CustomConstraint("neutron.network"),)),
        FLOATING_SUBNET: PropSchema("string", "The subnet to take the address from, by name or id.",
                                    constraints=(CustomConstraint("neutron.subnet"),)),
        VALUE_SPECS: PropSchema("map", "Further fields of the create request, passed as they are.",
                                default={}),
        PORT_ID: PropSchema("string", "A port with at least one IP address to put the address on.",
                            constraints=(CustomConstraint("neutron.port"),), update_allowed=True),
        FIXED_IP_ADDRESS: PropSchema("string", "Which of the port's addresses, if it has several.",
                                     constraints=(CustomConstraint("ip_addr"),), update_allowed=True),
        FLOATING_IP_ADDRESS: PropSchema("string", "The address wanted (administrators only, by Neutron's "
                                        "default policy).", constraints=(CustomConstraint("ip_addr"),)),
        DNS_NAME: PropSchema("string", "The address's DNS name.",
                             constraints=(CustomConstraint("rel_dns_name"),),
                             update_allowed=True),
        DNS_DOMAIN: PropSchema("string", "The address's DNS domain.",
                               constraints=(CustomConstraint("dns_domain"),), update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "router_id": AttrSchema("The router the address goes through, once it is on a port.", "string"),
        "tenant_id": AttrSchema("The project that owns the address.", "string"),
        "floating_network_id": AttrSchema("The network the address is from.", "string"),
        "fixed_ip_address": AttrSchema("The port's address the floating address maps to.", "string"),
        "floating_ip_address": AttrSchema("The floating address.", "string"),
        "port_id": AttrSchema("The port the address is on.", "string"),
    }
    live_fields: ClassVar[Mapping[str, str]] = {
        PORT_ID: "port_id", FIXED_IP_ADDRESS: "fixed_ip_address", DNS_NAME: "dns_name",
        DNS_DOMAIN: "dns_domain",
    }

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        if properties.get(PORT_ID) is None and properties.get(FIXED_IP_ADDRESS) is not None:
            raise PropertyDependency(FIXED_IP_ADDRESS, PORT_ID)

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        refs = [(FLOATING_NETWORK, Ref(Kind.NETWORK, properties.get(FLOATING_NETWORK) or "")),
                (FLOATING_SUBNET, Ref(Kind.SUBNET, properties.get(FLOATING_SUBNET) or ""))]
        return [(p, r) for p, r in refs if r.value]

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {
            "floating_network_id": resolve(Kind.NETWORK, props[FLOATING_NETWORK]),
            **given(props, (PORT_ID, FIXED_IP_ADDRESS, FLOATING_IP_ADDRESS, DNS_NAME, DNS_DOMAIN)),
        }
        if props.get(FLOATING_SUBNET):
            body["subnet_id"] = resolve(Kind.SUBNET, props[FLOATING_SUBNET])
        body.update(self.value_specs(props))
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        # Heat sends the port and its address whatever changed (a DNS change itself is not sent).
        if not changed:
            return {}
        return {PORT_ID: ctx.properties.get(PORT_ID), FIXED_IP_ADDRESS: ctx.properties.get(FIXED_IP_ADDRESS)}
