"""``OS::Neutron::Net``: a network, created and waited on until it is ACTIVE (or DOWN)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.neutron.base import Entity, NeutronResource, given
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Failed, StepContext
from libs.template.constraints import CustomConstraint

NAME = "name"
VALUE_SPECS = "value_specs"
ADMIN_STATE_UP = "admin_state_up"
TENANT_ID = "tenant_id"
SHARED = "shared"
DHCP_AGENT_IDS = "dhcp_agent_ids"
PORT_SECURITY_ENABLED = "port_security_enabled"
QOS_POLICY = "qos_policy"
DNS_DOMAIN = "dns_domain"
AVAILABILITY_ZONE_HINTS = "availability_zone_hints"
TAGS = "tags"

# Passed to Neutron under the property's own name.
_PLAIN = (ADMIN_STATE_UP, TENANT_ID, SHARED, PORT_SECURITY_ENABLED, DNS_DOMAIN, AVAILABILITY_ZONE_HINTS)


class Net(NeutronResource):
    """A Neutron network: an isolated layer-2 segment, the project's unless shared."""

    type_name: ClassVar[str] = "OS::Neutron::Net"
    description: ClassVar[str] = (
        "A Neutron network: a layer-2 broadcast domain, owned by one project unless it is shared.")
    entity: ClassVar[Entity] = Entity("network", "networks", has_status=True,
                                         tag_class="network.v2.network.Network")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The network's name; need not be unique.", update_allowed=True),
        VALUE_SPECS: PropSchema("map", "Further fields of the create request, passed to Neutron as "
                                "they are (hardware or extension specific).",
                                default={}, update_allowed=True),
        ADMIN_STATE_UP: PropSchema("boolean", "The network's administrative state.", default=True,
                                   update_allowed=True),
        TENANT_ID: PropSchema("string", "The project that owns the network (administrators only)."),
        SHARED: PropSchema("boolean", "Whether every project may use the network (administrators "
                           "only, by Neutron's default policy).", default=False, update_allowed=True),
        DHCP_AGENT_IDS: PropSchema("list", "The DHCP agents to host the network (administrators "
                                   "only).", update_allowed=True),
        PORT_SECURITY_ENABLED: PropSchema("boolean", "Port security on the network: the default of "
                                          "its ports.", update_allowed=True),
        QOS_POLICY: PropSchema("string", "The QoS policy of the network, by name or id.",
                               constraints=(CustomConstraint("neutron.qos_policy"),),
                               update_allowed=True),
        DNS_DOMAIN: PropSchema("string", "The network's DNS domain.",
                               constraints=(CustomConstraint("dns_domain"),), update_allowed=True),
        AVAILABILITY_ZONE_HINTS: PropSchema("list", "Availability zones the network may be in "
                                            "(the availability_zone extension)."),
        TAGS: PropSchema("list", "Tags of the network.", schema=PropSchema("string"), update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "status": AttrSchema("The network's status.", "string"),
        "name": AttrSchema("The network's name.", "string"),
        "subnets": AttrSchema("The network's subnets.", "list"),
        "admin_state_up": AttrSchema("The network's administrative state.", "string"),
        "tenant_id": AttrSchema("The project that owns the network.", "string"),
        "port_security_enabled": AttrSchema("Whether port security is on for the network.", "boolean"),
        "mtu": AttrSchema("The network's MTU in bytes.", "integer"),
        "qos_policy_id": AttrSchema("The network's QoS policy.", "string"),
        "l2_adjacency": AttrSchema("Whether the whole network is one layer-2 domain.", "boolean"),
        "segments": AttrSchema("The network's segments.", "list"),
    }
    live_fields: ClassVar[Mapping[str, str]] = {
        NAME: "name", ADMIN_STATE_UP: "admin_state_up", PORT_SECURITY_ENABLED: "port_security_enabled",
        DNS_DOMAIN: "dns_domain", QOS_POLICY: "qos_policy_id",
    }

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        policy = properties.get(QOS_POLICY)
        return [(QOS_POLICY, Ref(Kind.QOS_POLICY, policy))] if policy else []

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {NAME: self.name_of(ctx), **given(props, _PLAIN)}
        if props.get(QOS_POLICY):
            body["qos_policy_id"] = resolve(Kind.QOS_POLICY, props[QOS_POLICY])
        body.update(self.value_specs(props))
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        return self.changes(ctx, changed, _PLAIN, resolve)

