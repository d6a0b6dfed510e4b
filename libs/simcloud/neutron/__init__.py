"""Neutron (network v2.0) of the simulated cloud: the API openstacksdk's network proxy calls.

Networks, subnets, ports, routers (with interfaces), floating IPs, security groups
and rules, their tags, list filters/fields/sorting/paging, and per-project quotas,
answered in Neutron's shapes and with its errors.
"""

from libs.simcloud.neutron.api import make_app, seed

__all__ = ["make_app", "seed"]
