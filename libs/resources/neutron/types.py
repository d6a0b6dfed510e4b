"""Every ``OS::Neutron::*`` plugin, for the registry."""

from __future__ import annotations

from typing import Final

from libs.resources.base import ResourceType
from libs.resources.neutron.floating_ip import FloatingIP
from libs.resources.neutron.floating_ip_association import FloatingIPAssociation
from libs.resources.neutron.net import Net
from libs.resources.neutron.port import Port
from libs.resources.neutron.router import Router
from libs.resources.neutron.router_interface import RouterInterface
from libs.resources.neutron.security_group import SecurityGroup
from libs.resources.neutron.security_group_rule import SecurityGroupRule
from libs.resources.neutron.subnet import Subnet

NEUTRON_TYPES: Final[tuple[type[ResourceType], ...]] = (
    Net, Subnet, Port, Router, RouterInterface, FloatingIP, FloatingIPAssociation, SecurityGroup,
    SecurityGroupRule,
)
