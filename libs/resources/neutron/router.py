"""``OS::Neutron::Router``: a router, with its gateway on an external network, waited on until ACTIVE."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.neutron.base import Entity, NeutronResource, given
from libs.resources.neutron.errors import PropertyConflict
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Failed, StepContext
from libs.template.constraints import CustomConstraint
from libs.template.errors import StackValidationFailed

NAME = "name"
EXTERNAL_GATEWAY = "external_gateway_info"
VALUE_SPECS = "value_specs"
ADMIN_STATE_UP = "admin_state_up"
L3_AGENT_ID = "l3_agent_id"
L3_AGENT_IDS = "l3_agent_ids"
DISTRIBUTED = "distributed"
HA = "ha"
AVAILABILITY_ZONE_HINTS = "availability_zone_hints"
TAGS = "tags"
TENANT_ID = "tenant_id"
GW_NETWORK = "network"
GW_ENABLE_SNAT = "enable_snat"
GW_FIXED_IPS = "external_fixed_ips"
IP_ADDRESS = "ip_address"
SUBNET = "subnet"

_PLAIN_CREATE = (ADMIN_STATE_UP, DISTRIBUTED, HA, AVAILABILITY_ZONE_HINTS, TENANT_ID)
_PLAIN_UPDATE = (ADMIN_STATE_UP, AVAILABILITY_ZONE_HINTS)


class Router(NeutronResource):
    """A Neutron router: forwards between the networks it has interfaces on, and out its gateway."""

    type_name: ClassVar[str] = "OS::Neutron::Router"
    description: ClassVar[str] = (
        "A Neutron router: passes traffic between the subnets it has interfaces on and, through its "
        "gateway, to an external network.")
    entity: ClassVar[Entity] = Entity("router", "routers", has_status=True,
                                         tag_class="network.v2.router.Router")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The router's name.", update_allowed=True),
        EXTERNAL_GATEWAY: PropSchema(
            "map", "The router's gateway: an external network, SNAT, and fixed addresses on it.",
            update_allowed=True,
            schema={
                GW_NETWORK: PropSchema("string", "The external network, by name or id.", required=True,
                                       update_allowed=True),
                GW_ENABLE_SNAT: PropSchema("boolean", "Source NAT on the gateway (an administrator's "
                                           "choice by Neutron's default policy).", update_allowed=True),
                GW_FIXED_IPS: PropSchema(
                    "list", "Addresses of the gateway on the external network.", update_allowed=True,
                    schema=PropSchema("map", schema={
                        IP_ADDRESS: PropSchema("string", "A gateway address.",
                                               constraints=(CustomConstraint("ip_addr"),)),
                        SUBNET: PropSchema("string", "The external subnet of the address.",
                                           constraints=(CustomConstraint("neutron.subnet"),)),
                    })),
            }),
        VALUE_SPECS: PropSchema("map", "Further fields of the create request, passed as they are.",
                                default={}, update_allowed=True),
        ADMIN_STATE_UP: PropSchema("boolean", "The router's administrative state.", default=True,
                                   update_allowed=True),
        L3_AGENT_ID: PropSchema("string", "The L3 agent to host the router (administrators only).",
                                update_allowed=True, support_status="HIDDEN"),
        L3_AGENT_IDS: PropSchema("list", "The L3 agents to host the router: one unless it is HA "
                                 "(administrators only).", schema=PropSchema("string"), update_allowed=True),
        DISTRIBUTED: PropSchema("boolean", "A distributed router (administrators only)."),
        HA: PropSchema("boolean", "A highly available router (administrators only)."),
        AVAILABILITY_ZONE_HINTS: PropSchema("list", "Availability zones the router may be in.",
                                            update_allowed=True),
        TAGS: PropSchema("list", "Tags of the router.", schema=PropSchema("string"), update_allowed=True),
        TENANT_ID: PropSchema("string", "The project that owns the router (administrators only)."),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "status": AttrSchema("The router's status.", "string"),
        "external_gateway_info": AttrSchema("The router's gateway.", "map"),
        "name": AttrSchema("The router's name.", "string"),
        "admin_state_up": AttrSchema("The router's administrative state.", "string"),
        "tenant_id": AttrSchema("The project that owns the router.", "string"),
    }
    live_fields: ClassVar[Mapping[str, str]] = {NAME: "name", ADMIN_STATE_UP: "admin_state_up"}

    def validate(self, values: Mapping[str, Any] | None, **kwargs: Any) -> dict[str, Any]:
        typed = super().validate(values, **kwargs)
        # Heat's translation: the old single agent joins the list (its conflict is checked first).
        if typed.get(L3_AGENT_ID) and not typed.get(L3_AGENT_IDS):
            typed[L3_AGENT_IDS] = [typed[L3_AGENT_ID]]
            typed[L3_AGENT_ID] = None
        return typed

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        agent, agents = properties.get(L3_AGENT_ID), properties.get(L3_AGENT_IDS)
        distributed, ha = properties.get(DISTRIBUTED), properties.get(HA)
        if agent and agents:
            raise PropertyConflict(L3_AGENT_ID, L3_AGENT_IDS)
        if distributed and (agent or agents):
            raise PropertyConflict(DISTRIBUTED, f"{L3_AGENT_ID}/{L3_AGENT_IDS}")
        if ha and distributed:
            raise PropertyConflict(DISTRIBUTED, HA)
        if not ha and isinstance(agents, list) and len(agents) > 1:
            raise StackValidationFailed("Non HA routers can only have one L3 agent.")

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        gateway = properties.get(EXTERNAL_GATEWAY)
        if not isinstance(gateway, Mapping):
            return []
        refs = [(EXTERNAL_GATEWAY, Ref(Kind.NETWORK, gateway.get(GW_NETWORK) or ""))]
        refs += [(EXTERNAL_GATEWAY, Ref(Kind.SUBNET, ip.get(SUBNET) or ""))
                 for ip in gateway.get(GW_FIXED_IPS) or () if isinstance(ip, Mapping)]
        return [(p, r) for p, r in refs if r.value]

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {NAME: self.name_of(ctx), **given(props, _PLAIN_CREATE)}
        if props.get(EXTERNAL_GATEWAY):
            body[EXTERNAL_GATEWAY] = _gateway(props[EXTERNAL_GATEWAY], resolve)
        body.update(self.value_specs(props))
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        body = self.changes(ctx, changed, _PLAIN_UPDATE, resolve)
        if EXTERNAL_GATEWAY in changed:
            gateway = ctx.properties.get(EXTERNAL_GATEWAY)
            body[EXTERNAL_GATEWAY] = _gateway(gateway, resolve) if gateway else None
        return body


def _gateway(gateway: Mapping[str, Any], resolve: Resolver) -> dict[str, Any]:
    """The gateway as Neutron takes it: ``network_id``, and what else was given."""
    out: dict[str, Any] = {"network_id": resolve(Kind.NETWORK, gateway.get(GW_NETWORK))}
    if gateway.get(GW_ENABLE_SNAT) is not None:
        out[GW_ENABLE_SNAT] = gateway[GW_ENABLE_SNAT]
    if gateway.get(GW_FIXED_IPS) is not None:
        fixed: list[dict[str, Any]] = []
        for ip in gateway[GW_FIXED_IPS]:
            item: dict[str, Any] = {}
            if ip.get(IP_ADDRESS) is not None:
                item[IP_ADDRESS] = ip[IP_ADDRESS]
            if ip.get(SUBNET) is not None:
                item["subnet_id"] = resolve(Kind.SUBNET, ip[SUBNET])
            fixed.append(item)
        out[GW_FIXED_IPS] = fixed
    return out
