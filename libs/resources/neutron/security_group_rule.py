"""``OS::Neutron::SecurityGroupRule``: one rule of a security group, which may be another stack's.

Rules carry no tags; a rule is its match (direction, ethertype, protocol, ports,
remote), and Neutron refuses two with the same one. So a create whose answer was
lost looks among the group's rules for that match, and adopts it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from libs.cloud.calls import CloudCall, Service
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.neutron import wire
from libs.resources.neutron.base import ADOPT_KEY, Entity, NeutronResource
from libs.resources.neutron.errors import PropertyConflict
from libs.resources.neutron.security_group import PROTOCOL_TEXT, PROTOCOLS, rule_key, rule_schema
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import StepContext
from libs.template.constraints import AllowedValues, CustomConstraint
from libs.template.errors import StackValidationFailed

SECURITY_GROUP = "security_group"
DESCRIPTION = "description"
DIRECTION = "direction"
ETHERTYPE = "ethertype"
PORT_RANGE_MIN = "port_range_min"
PORT_RANGE_MAX = "port_range_max"
PROTOCOL = "protocol"
REMOTE_GROUP = "remote_group"
REMOTE_IP_PREFIX = "remote_ip_prefix"


# The match of a rule is spelled as in a group's rules.
_RULE = rule_schema()


class SecurityGroupRule(NeutronResource):
    """One rule of a security group, named by the group's name or id."""

    type_name: ClassVar[str] = "OS::Neutron::SecurityGroupRule"
    description: ClassVar[str] = "A rule of a Neutron security group, which need not belong to the stack."
    support_status: ClassVar[SupportStatus] = SupportStatus(version="7.0.0")
    entity: ClassVar[Entity] = Entity("security_group_rule", "security_group_rules")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        SECURITY_GROUP: PropSchema("string", "The group the rule is added to, by name or id.", required=True,
                                   constraints=(CustomConstraint("neutron.security_group"),)),
        DESCRIPTION: PropSchema("string", "The rule's description."),
        **{key: _RULE[key] for key in (DIRECTION, ETHERTYPE, PORT_RANGE_MIN, PORT_RANGE_MAX)},
        PROTOCOL: PropSchema("string", PROTOCOL_TEXT, default="tcp", constraints=(AllowedValues(PROTOCOLS),)),
        REMOTE_GROUP: PropSchema("string", "The remote group matched, by name or id.",
                                 constraints=(CustomConstraint("neutron.security_group"),)),
        REMOTE_IP_PREFIX: PropSchema("string", "The remote CIDR matched.",
                                     constraints=(CustomConstraint("net_cidr"),)),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {}

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        if properties.get(REMOTE_GROUP) is not None and properties.get(REMOTE_IP_PREFIX) is not None:
            raise PropertyConflict(REMOTE_GROUP, REMOTE_IP_PREFIX)
        low, high = properties.get(PORT_RANGE_MIN), properties.get(PORT_RANGE_MAX)
        if (isinstance(low, int) and isinstance(high, int) and high < low
                and properties.get(PROTOCOL) not in ("icmp", "icmpv6", "ipv6-icmp")):
            raise StackValidationFailed("The minimum port number must be less than or equal to the "
                                        "maximum port number.")

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        refs = [(SECURITY_GROUP, Ref(Kind.SECURITY_GROUP, properties.get(SECURITY_GROUP) or "")),
                (REMOTE_GROUP, Ref(Kind.SECURITY_GROUP, properties.get(REMOTE_GROUP) or ""))]
        return [(p, r) for p, r in refs if r.value]

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {
            "security_group_id": resolve(Kind.SECURITY_GROUP, props[SECURITY_GROUP]),
            **{k: props[k] for k in (DESCRIPTION, DIRECTION, ETHERTYPE, PROTOCOL, REMOTE_IP_PREFIX)
               if props.get(k) is not None},
        }
        if props.get(REMOTE_GROUP) is not None:
            body["remote_group_id"] = resolve(Kind.SECURITY_GROUP, props[REMOTE_GROUP])
        for key in (PORT_RANGE_MIN, PORT_RANGE_MAX):
            if props.get(key) is not None:
                body[key] = str(props[key])
        return body

    def adopt_calls(self, ctx: StepContext) -> tuple[CloudCall, ...]:
        group = self._ids(ctx)(Kind.SECURITY_GROUP, ctx.properties[SECURITY_GROUP])
        return (CloudCall(ADOPT_KEY, Service.NETWORK, "security_group_rules",
                          kwargs={"security_group_id": group}),)

    def adopt_pick(self, ctx: StepContext, listed: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        wanted = rule_key(self.create_body(ctx, self._ids(ctx)))
        return next((r for r in listed if rule_key(wire.neutron_view(r)) == wanted), None)
