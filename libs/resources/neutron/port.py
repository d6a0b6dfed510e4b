"""``OS::Neutron::Port``: a port on a network, waited on until it is not BUILD (DOWN counts as built)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.neutron.base import Entity, NeutronResource, given
from libs.resources.neutron.errors import PropertyConflict
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import UNKNOWN, PropSchema
from libs.resources.steps import Failed, StepContext
from libs.template.constraints import AllowedValues, CustomConstraint

NAME = "name"
NETWORK_ID = "network_id"
NETWORK = "network"
FIXED_IPS = "fixed_ips"
SECURITY_GROUPS = "security_groups"
REPLACEMENT_POLICY = "replacement_policy"
DEVICE_ID = "device_id"
DEVICE_OWNER = "device_owner"
DNS_NAME = "dns_name"
TAGS = "tags"
VALUE_SPECS = "value_specs"
ADMIN_STATE_UP = "admin_state_up"
MAC_ADDRESS = "mac_address"
ALLOWED_ADDRESS_PAIRS = "allowed_address_pairs"
VNIC_TYPE = "binding:vnic_type"
QOS_POLICY = "qos_policy"
PORT_SECURITY_ENABLED = "port_security_enabled"
PROPAGATE_UPLINK_STATUS = "propagate_uplink_status"
NO_FIXED_IPS = "no_fixed_ips"
SUBNET = "subnet"
SUBNET_ID = "subnet_id"
IP_ADDRESS = "ip_address"

VNIC_TYPES = ("normal", "direct", "macvtap", "direct-physical", "baremetal", "virtio-forwarder", "smart-nic")
_PLAIN = (DEVICE_ID, DEVICE_OWNER, DNS_NAME, ADMIN_STATE_UP, MAC_ADDRESS, VNIC_TYPE, PORT_SECURITY_ENABLED,
          PROPAGATE_UPLINK_STATUS)


class Port(NeutronResource):
    """A Neutron port: where an interface plugs into a network, with its MAC and fixed IPs."""

    type_name: ClassVar[str] = "OS::Neutron::Port"
    renamed_properties: ClassVar[Mapping[str, str]] = {NETWORK_ID: NETWORK}
    description: ClassVar[str] = (
        "A Neutron port: a virtual switch port on a network, with the MAC address and the fixed IP "
        "addresses an interface plugged into it gets.")
    entity: ClassVar[Entity] = Entity("port", "ports", has_status=True, tag_class="network.v2.port.Port")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The port's name.", update_allowed=True),
        NETWORK_ID: PropSchema("string", constraints=(CustomConstraint("neutron.network"),),
                               support_status="HIDDEN"),
        NETWORK: PropSchema("string", "The port's network, by name or id. To put a floating IP on the "
                            "port, give fixed_ips with a subnet. Another network on update replaces "
                            "the port.", required=True, constraints=(CustomConstraint("neutron.network"),)),
        DEVICE_ID: PropSchema("string", "The id of the device using the port.", default="",
                              update_allowed=True),
        DEVICE_OWNER: PropSchema("string", "What owns the port (network:floatingip, "
                                 "network:router_interface, network:dhcp...).", default="",
                                 update_allowed=True),
        FIXED_IPS: PropSchema(
            "list", "The IP addresses the port asks for.", update_allowed=True,
            schema=PropSchema("map", schema={
                SUBNET_ID: PropSchema("string", constraints=(CustomConstraint("neutron.subnet"),),
                                      support_status="HIDDEN"),
                SUBNET: PropSchema("string", "The subnet to take the address from.",
                                   constraints=(CustomConstraint("neutron.subnet"),)),
                IP_ADDRESS: PropSchema("string", "The address wanted in the subnet.",
                                       constraints=(CustomConstraint("ip_addr"),)),
            })),
        SECURITY_GROUPS: PropSchema("list", "Security groups of the port, by id (or name).",
                                    update_allowed=True),
        REPLACEMENT_POLICY: PropSchema(
            "string", "REPLACE_ALWAYS: every update replaces the port; AUTO: changes allowed in place "
            "are made in place.", default="AUTO", constraints=(AllowedValues(("REPLACE_ALWAYS", "AUTO")),),
            update_allowed=True, support_status="HIDDEN"),
        DNS_NAME: PropSchema("string", "The port's DNS name.", constraints=(CustomConstraint("dns_name"),),
                             update_allowed=True),
        TAGS: PropSchema("list", "Tags of the port.", schema=PropSchema("string"), update_allowed=True),
        VALUE_SPECS: PropSchema("map", "Further fields of the create request, passed as they are.",
                                default={}, update_allowed=True),
        ADMIN_STATE_UP: PropSchema("boolean", "The port's administrative state.", default=True,
                                   update_allowed=True),
        MAC_ADDRESS: PropSchema("string", "The port's MAC address (changing it is for administrators "
                                "by Neutron's default policy).", constraints=(CustomConstraint("mac_addr"),)),
        ALLOWED_ADDRESS_PAIRS: PropSchema(
            "list", "More MAC and IP addresses the port lets through.", update_allowed=True,
            schema=PropSchema("map", schema={
                MAC_ADDRESS: PropSchema("string", "A MAC address let through.",
                                        constraints=(CustomConstraint("mac_addr"),)),
                IP_ADDRESS: PropSchema("string", "An IP address or CIDR let through.", required=True,
                                       constraints=(CustomConstraint("ip_or_cidr"),)),
            })),
        VNIC_TYPE: PropSchema("string", "The VNIC type to bind the port as (the bindings extension): "
                              "normal, direct (PCI passthrough), macvtap...", default="normal",
                              constraints=(AllowedValues(VNIC_TYPES),), update_allowed=True),
        PORT_SECURITY_ENABLED: PropSchema("boolean", "Port security: off means no filtering (no "
                                          "security groups, no address pairs).", update_allowed=True),
        QOS_POLICY: PropSchema("string", "The QoS policy of the port, by name or id.",
                               constraints=(CustomConstraint("neutron.qos_policy"),), update_allowed=True),
        PROPAGATE_UPLINK_STATUS: PropSchema("boolean", "Whether the port follows its uplink's status.",
                                            update_allowed=True),
        NO_FIXED_IPS: PropSchema("boolean", "No fixed IP at all on the port.", default=False,
                                 update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "admin_state_up": AttrSchema("The port's administrative state.", "string"),
        "device_id": AttrSchema("The device using the port.", "string"),
        "device_owner": AttrSchema("What owns the port.", "string"),
        "fixed_ips": AttrSchema("The port's fixed IP addresses.", "list"),
        "mac_address": AttrSchema("The port's MAC address.", "string"),
        "name": AttrSchema("The port's name.", "string"),
        "network_id": AttrSchema("The port's network.", "string"),
        "security_groups": AttrSchema("The port's security groups.", "list"),
        "status": AttrSchema("The port's status.", "string"),
        "tenant_id": AttrSchema("The project that owns the port.", "string"),
        "allowed_address_pairs": AttrSchema("More MAC and IP addresses the port lets through.", "list"),
        "subnets": AttrSchema("The subnets of the port's fixed IPs.", "list"),
        "port_security_enabled": AttrSchema("Whether port security is on for the port.", "boolean"),
        "qos_policy_id": AttrSchema("The port's QoS policy.", "string"),
        "dns_assignment": AttrSchema("The DNS names given to the port.", "map"),
        "network": AttrSchema("The port's network, as Neutron shows it.", "map"),
        "propagate_uplink_status": AttrSchema("Whether the port follows its uplink's status.", "boolean"),
    }
    # Not the device: Nova sets it on the ports its servers use, and converging it back would unplug them.
    live_fields: ClassVar[Mapping[str, str]] = {
        NAME: "name", ADMIN_STATE_UP: "admin_state_up",
        SECURITY_GROUPS: "security_groups", ALLOWED_ADDRESS_PAIRS: "allowed_address_pairs",
        PORT_SECURITY_ENABLED: "port_security_enabled", QOS_POLICY: "qos_policy_id", DNS_NAME: "dns_name",
    }

    def validate(self, values: Mapping[str, Any] | None, **kwargs: Any) -> dict[str, Any]:
        # Heat's other translation (network_id is renamed_properties'): subnet_id for a fixed IP's subnet.
        typed = super().validate(values, **kwargs)
        for fixed_ip in _fixed_ips(typed.get(FIXED_IPS)):
            if fixed_ip.get(SUBNET) is None and fixed_ip.get(SUBNET_ID) is not None:
                fixed_ip[SUBNET] = fixed_ip.pop(SUBNET_ID)
            elif SUBNET_ID in fixed_ip:
                fixed_ip.pop(SUBNET_ID)
        return typed

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        if properties.get(FIXED_IPS) and properties.get(NO_FIXED_IPS):
            raise PropertyConflict(FIXED_IPS, NO_FIXED_IPS)

    def replace_for_changes(self, changed: set[str], old_properties: Mapping[str, Any],
                            new_properties: Mapping[str, Any]) -> bool:
        return new_properties.get(REPLACEMENT_POLICY) == "REPLACE_ALWAYS"

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        refs = [(NETWORK, Ref(Kind.NETWORK, properties.get(NETWORK) or ""))]
        if updating and properties.get(SECURITY_GROUPS) is None:
            refs.append((SECURITY_GROUPS, Ref(Kind.SECURITY_GROUP, "default")))
        refs += [(FIXED_IPS, Ref(Kind.SUBNET, ip.get(SUBNET) or ""))
                 for ip in _fixed_ips(properties.get(FIXED_IPS))]
        refs += [(SECURITY_GROUPS, Ref(Kind.SECURITY_GROUP, str(g)))
                 for g in properties.get(SECURITY_GROUPS) or () if isinstance(g, str)]
        if properties.get(QOS_POLICY):
            refs.append((QOS_POLICY, Ref(Kind.QOS_POLICY, properties[QOS_POLICY])))
        return [(p, r) for p, r in refs if r.value]

    def _port_fields(self, ctx: StepContext, names: set[str], resolve: Resolver, *,
                     updating: bool) -> dict[str, Any]:
        """Heat's preparation of the fixed IPs, address pairs and security groups it sends."""
        props = ctx.properties
        body: dict[str, Any] = {}
        if props.get(NO_FIXED_IPS):
            if NO_FIXED_IPS in names or FIXED_IPS in names:
                body[FIXED_IPS] = []
        elif FIXED_IPS in names and props.get(FIXED_IPS):
            # An empty list is not sent: Neutron then picks an address (create) or keeps them (update).
            body[FIXED_IPS] = [_fixed_ip(ip, resolve) for ip in props[FIXED_IPS]]
        if ALLOWED_ADDRESS_PAIRS in names and (props.get(ALLOWED_ADDRESS_PAIRS) is not None or updating):
            body[ALLOWED_ADDRESS_PAIRS] = [{k: v for k, v in pair.items() if v is not None}
                                           for pair in props.get(ALLOWED_ADDRESS_PAIRS) or ()]
        if SECURITY_GROUPS in names:
            groups = props.get(SECURITY_GROUPS)
            if groups is not None:
                body[SECURITY_GROUPS] = [resolve(Kind.SECURITY_GROUP, g) for g in groups]
            elif updating:
                # Removed from the template: back to the project's default group, as at create.
                body[SECURITY_GROUPS] = [resolve(Kind.SECURITY_GROUP, "default")]
        return body

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {NAME: self.name_of(ctx), **given(props, _PLAIN),
                                "network_id": resolve(Kind.NETWORK, props[NETWORK])}
        body.update(self._port_fields(ctx, {FIXED_IPS, ALLOWED_ADDRESS_PAIRS, SECURITY_GROUPS},
                                      resolve, updating=False))
        if props.get(QOS_POLICY):
            body["qos_policy_id"] = resolve(Kind.QOS_POLICY, props[QOS_POLICY])
        body.update(self.value_specs(props))
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        body = self.changes(ctx, changed, (k for k in _PLAIN if k != MAC_ADDRESS), resolve)
        return {**body, **self._port_fields(ctx, changed, resolve, updating=True)}


def _fixed_ips(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        return []
    return [ip for ip in value if isinstance(ip, dict)]


def _fixed_ip(fixed_ip: Mapping[str, Any], resolve: Resolver) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if fixed_ip.get(SUBNET) not in (None, UNKNOWN):
        out[SUBNET_ID] = resolve(Kind.SUBNET, fixed_ip[SUBNET])
    if fixed_ip.get(IP_ADDRESS) is not None:
        out[IP_ADDRESS] = fixed_ip[IP_ADDRESS]
    return out
