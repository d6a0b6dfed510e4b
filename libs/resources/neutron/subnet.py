"""``OS::Neutron::Subnet``: an address block of a network (subnets have no status: done when made)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.neutron.base import Entity, NeutronResource, given
from libs.resources.neutron.errors import PropertyConflict, PropertyUnspecified
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Failed, StepContext
from libs.template.constraints import AllowedValues, CustomConstraint, Range
from libs.template.errors import StackValidationFailed

NETWORK_ID = "network_id"
NETWORK = "network"
SUBNETPOOL = "subnetpool"
PREFIXLEN = "prefixlen"
CIDR = "cidr"
VALUE_SPECS = "value_specs"
NAME = "name"
IP_VERSION = "ip_version"
DNS_NAMESERVERS = "dns_nameservers"
GATEWAY_IP = "gateway_ip"
ENABLE_DHCP = "enable_dhcp"
ALLOCATION_POOLS = "allocation_pools"
TENANT_ID = "tenant_id"
HOST_ROUTES = "host_routes"
IPV6_RA_MODE = "ipv6_ra_mode"
IPV6_ADDRESS_MODE = "ipv6_address_mode"
SEGMENT = "segment"
TAGS = "tags"

IPV6_MODES = ("dhcpv6-stateful", "dhcpv6-stateless", "slaac")
_PLAIN_CREATE = (PREFIXLEN, CIDR, IP_VERSION, DNS_NAMESERVERS, ENABLE_DHCP, ALLOCATION_POOLS, TENANT_ID,
                 HOST_ROUTES, IPV6_RA_MODE, IPV6_ADDRESS_MODE)
_PLAIN_UPDATE = (DNS_NAMESERVERS, ENABLE_DHCP, HOST_ROUTES)


def _network_id_schema() -> PropSchema:
    return PropSchema("string", constraints=(CustomConstraint("neutron.network"),), support_status="HIDDEN")


class Subnet(NeutronResource):
    """A Neutron subnet: a CIDR of a network from which its ports take addresses."""

    type_name: ClassVar[str] = "OS::Neutron::Subnet"
    renamed_properties: ClassVar[Mapping[str, str]] = {NETWORK_ID: NETWORK}
    description: ClassVar[str] = (
        "A Neutron subnet: an address block of a network, from which the network's ports take "
        "their addresses, the whole CIDR or given allocation pools.")
    entity: ClassVar[Entity] = Entity("subnet", "subnets", tag_class="network.v2.subnet.Subnet")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NETWORK_ID: _network_id_schema(),
        NETWORK: PropSchema("string", "The network of the subnet, by name or id.", required=True,
                            constraints=(CustomConstraint("neutron.network"),)),
        SUBNETPOOL: PropSchema("string", "The subnet pool to take the CIDR from, by name or id.",
                               constraints=(CustomConstraint("neutron.subnetpool"),)),
        PREFIXLEN: PropSchema("integer", "The prefix length of a CIDR taken from a subnet pool.",
                              constraints=(Range(min=0),)),
        CIDR: PropSchema("string", "The subnet's CIDR.", constraints=(CustomConstraint("net_cidr"),)),
        VALUE_SPECS: PropSchema("map", "Further fields of the create request, passed as they are.",
                                default={}, update_allowed=True),
        NAME: PropSchema("string", "The subnet's name.", update_allowed=True),
        IP_VERSION: PropSchema("integer", "IP version: 4 or 6.", default=4,
                               constraints=(AllowedValues((4, 6)),)),
        DNS_NAMESERVERS: PropSchema("list", "DNS name servers of the subnet.", default=[],
                                    update_allowed=True),
        GATEWAY_IP: PropSchema(
            "string", "The gateway address. null, ~ or an empty string: no gateway; left out at create: "
            "Neutron takes the first free address; left out at update: the gateway is removed.",
            update_allowed=True),
        ENABLE_DHCP: PropSchema("boolean", "Whether DHCP serves the subnet.", default=True,
                                update_allowed=True),
        ALLOCATION_POOLS: PropSchema(
            "list", "Ranges of addresses ports may be given.", update_allowed=True,
            schema=PropSchema("map", schema={
                "start": PropSchema("string", "First address of the pool.", required=True,
                                    constraints=(CustomConstraint("ip_addr"),)),
                "end": PropSchema("string", "Last address of the pool.", required=True,
                                  constraints=(CustomConstraint("ip_addr"),)),
            })),
        TENANT_ID: PropSchema("string", "The project that owns the subnet (administrators only)."),
        HOST_ROUTES: PropSchema(
            "list", "Static routes given to the subnet's hosts.", update_allowed=True,
            schema=PropSchema("map", schema={
                "destination": PropSchema("string", "Where the route leads.", required=True,
                                          constraints=(CustomConstraint("net_cidr"),)),
                "nexthop": PropSchema("string", "The route's next hop.", required=True,
                                      constraints=(CustomConstraint("ip_addr"),)),
            })),
        IPV6_RA_MODE: PropSchema("string", "IPv6 router advertisement mode.",
                                 constraints=(AllowedValues(IPV6_MODES),)),
        IPV6_ADDRESS_MODE: PropSchema("string", "IPv6 address mode.",
                                      constraints=(AllowedValues(IPV6_MODES),)),
        SEGMENT: PropSchema("string", "The network segment of the subnet, by name or id.",
                            constraints=(CustomConstraint("neutron.segment"),), update_allowed=True),
        TAGS: PropSchema("list", "Tags of the subnet.", schema=PropSchema("string"), update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "name": AttrSchema("The subnet's name.", "string"),
        "network_id": AttrSchema("The subnet's network.", "string"),
        "tenant_id": AttrSchema("The project that owns the subnet.", "string"),
        "allocation_pools": AttrSchema("The subnet's allocation pools.", "list"),
        "gateway_ip": AttrSchema("The subnet's gateway address.", "string"),
        "host_routes": AttrSchema("The subnet's static routes.", "list"),
        "ip_version": AttrSchema("The subnet's IP version.", "string"),
        "cidr": AttrSchema("The subnet's CIDR.", "string"),
        "dns_nameservers": AttrSchema("The subnet's DNS name servers.", "list"),
        "enable_dhcp": AttrSchema("Whether DHCP serves the subnet.", "string"),
    }
    live_fields: ClassVar[Mapping[str, str]] = {
        NAME: "name", DNS_NAMESERVERS: "dns_nameservers", ENABLE_DHCP: "enable_dhcp",
        GATEWAY_IP: "gateway_ip", ALLOCATION_POOLS: "allocation_pools", HOST_ROUTES: "host_routes",
    }

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        super().validate_typed(properties)
        pool, prefixlen, cidr = properties.get(SUBNETPOOL), properties.get(PREFIXLEN), properties.get(CIDR)
        if pool is not None and cidr:
            raise PropertyConflict(SUBNETPOOL, CIDR)
        if pool is None and not cidr:
            raise PropertyUnspecified(SUBNETPOOL, CIDR)
        if prefixlen and cidr:
            raise PropertyConflict(PREFIXLEN, CIDR)
        ra_mode, address_mode = properties.get(IPV6_RA_MODE), properties.get(IPV6_ADDRESS_MODE)
        if properties.get(IP_VERSION) == 4 and (ra_mode or address_mode):
            raise StackValidationFailed("ipv6_ra_mode and ipv6_address_mode are not supported for ipv4.")
        if ra_mode and address_mode and ra_mode != address_mode:
            raise StackValidationFailed("When both ipv6_ra_mode and ipv6_address_mode are set, they must "
                                        "be equal.")
        gateway = properties.get(GATEWAY_IP)
        if isinstance(gateway, str) and gateway not in ("~", "", "auto") and not _is_ip(gateway):
            # Heat formats this message wrongly (a tuple); Ember says what it means.
            raise StackValidationFailed(f'Gateway IP address "{gateway}" is in invalid format.')

    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        refs = [(NETWORK, Ref(Kind.NETWORK, properties.get(NETWORK) or ""))]
        return [(p, r) for p, r in refs if r.value]

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        props = ctx.properties
        body: dict[str, Any] = {NAME: self.name_of(ctx), **given(props, _PLAIN_CREATE),
                                "network_id": resolve(Kind.NETWORK, props[NETWORK])}
        if props.get(SEGMENT):
            body["segment_id"] = props[SEGMENT]
        if props.get(SUBNETPOOL):
            body["subnetpool_id"] = props[SUBNETPOOL]
        _gateway(props, body, creating=True)
        body.update(self.value_specs(props))
        return body

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        props = ctx.properties
        body = self.changes(ctx, changed, _PLAIN_UPDATE, resolve)
        if ALLOCATION_POOLS in changed:
            body[ALLOCATION_POOLS] = props[ALLOCATION_POOLS] or []
        if SEGMENT in changed and props[SEGMENT]:
            if (ctx.old_properties or {}).get(SEGMENT) is not None:
                return Failed("Updating the subnet segment assciation only allowed when the current "
                              "segment_id is None. The subnet is currently associated with segment. In "
                              "this state update is not supported for resource.",
                              "ResourceActionNotSupported")
            body["segment_id"] = props[SEGMENT]
        if GATEWAY_IP in changed:
            if props[GATEWAY_IP] == "auto":
                return Failed('The value "auto" for gateway_ip cannot be used to update an existing '
                              "subnet. It is only supported during subnet creation. is not supported for "
                              "resource.", "ResourceActionNotSupported")
            _gateway(props, body, creating=False)
        return body


def _gateway(props: Mapping[str, Any], body: dict[str, Any], *, creating: bool) -> None:
    """Heat's gateway rules: "" (what null becomes) is none, "auto" (create only) lets Neutron choose."""
    gateway = props.get(GATEWAY_IP)
    if gateway is None:
        if not creating:
            body[GATEWAY_IP] = None  # removed from the template: the gateway is detached
        return
    if gateway == "auto":
        return
    body[GATEWAY_IP] = None if gateway == "" else gateway


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True

