"""Who may call a route in keystone mode: the rule each route declares, and whether roles satisfy it (pure).

Every route declares a :class:`Rule` beside its entry in
:data:`services.api.openapi.OPERATIONS`: the policy name a refusal gives
(Heat's own, e.g. ``stacks:create``, or Ember's in the same form for its own
routes) and the least role it needs, as Heat 27's default policies
(``heat/policies/*.py``, new defaults enforced) give them: a ``reader`` may
look, preview a create, check a stack and signal a resource; changing
anything, validating a template or exporting a stack needs ``member``; the
engine list needs ``admin``. Roles imply as Keystone's default implied roles
do: ``admin`` holds ``member``, which holds ``reader``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from libs.template.errors import TemplateError

# Keystone's implied roles, and the older names Heat's deployments give members.
MEMBER_ROLES = frozenset({"member", "admin", "_member_", "heat_stack_owner"})
READER_ROLES = MEMBER_ROLES | {"reader"}


class Need(enum.Enum):
    ANYONE = "anyone"  # outside /v1/{project_id}: no token checked here (identity checks its own)
    READER = "reader"
    MEMBER = "member"
    ADMIN = "admin"


@dataclasses.dataclass(frozen=True)
class Rule:
    action: str  # the policy a refusal names: "You are not authorized to use <action>."
    needs: Need
    # POST .../actions: the body's one key picks the rule (Heat's actions:<name>); a body that
    # picks none is the handler's 400, as Heat checks the body before the policy.
    by_body: Mapping[str, Rule] = dataclasses.field(default_factory=lambda: MappingProxyType({}))


PUBLIC = Rule("", Need.ANYONE)


def reader(action: str) -> Rule:
    return Rule(action, Need.READER)


def member(action: str) -> Rule:
    return Rule(action, Need.MEMBER)


def admin(action: str) -> Rule:
    return Rule(action, Need.ADMIN)


def by_body(action: str, rules: Mapping[str, Rule]) -> Rule:
    return Rule(action, Need.READER, MappingProxyType(dict(rules)))


def allows(needs: Need, roles: frozenset[str]) -> bool:
    if needs is Need.ANYONE:
        return True
    if needs is Need.READER:
        return bool(roles & READER_ROLES)
    if needs is Need.MEMBER:
        return bool(roles & MEMBER_ROLES)
    return "admin" in roles


# Heat 27's ``resource_types:<type>`` policies (``heat/policies/resource_types.py``): the types only
# a project's admin may use in a stack (``::*`` ends a family). Every other type is anyone's.
ADMIN_RESOURCE_TYPES: frozenset[str] = frozenset({
    "OS::Nova::Flavor", "OS::Cinder::EncryptedVolumeType", "OS::Cinder::VolumeType", "OS::Cinder::Quota",
    "OS::Neutron::Quota", "OS::Nova::Quota", "OS::Octavia::Quota", "OS::Manila::ShareType",
    "OS::Neutron::ProviderNet", "OS::Neutron::QoSPolicy", "OS::Neutron::QoSBandwidthLimitRule",
    "OS::Neutron::QoSDscpMarkingRule", "OS::Neutron::QoSMinimumBandwidthRule",
    "OS::Neutron::QoSMinimumPacketRateRule", "OS::Neutron::Segment", "OS::Nova::HostAggregate",
    "OS::Cinder::QoSSpecs", "OS::Cinder::QoSAssociation", "OS::Keystone::*", "OS::Blazar::Host",
    "OS::Octavia::Flavor", "OS::Octavia::FlavorProfile", "OS::Octavia::AvailabilityZone",
    "OS::Octavia::AvailabilityZoneProfile"})


def admin_only_type(type_name: str) -> bool:
    return refusal_for_type(type_name) is not None


def refusal_for_type(type_name: str) -> str | None:
    """What Heat's refusal of an admin-only type to a non-admin names (None: anyone may use it): its
    policy, or for a type of an admin-only family (``OS::Keystone::*``) the bare type name."""
    if type_name in ADMIN_RESOURCE_TYPES:
        return f"resource_types:{type_name}"
    if "::".join([*type_name.split("::")[:-1], "*"]) in ADMIN_RESOURCE_TYPES:
        return type_name
    return None


def enforce_resource_types(template: Any, roles: frozenset[str]) -> None:
    """Heat's check of a stack's resource types against their policies, made when a stack is created,
    updated or previewed, before its validation: ``Forbidden`` for the first admin-only type a
    non-admin's template uses (in the template's order)."""
    if "admin" in roles or not isinstance(template, Mapping):
        return
    for section in ("resources", "Resources"):
        found = template.get(section)
        if not isinstance(found, Mapping):
            continue
        for definition in found.values():
            if not isinstance(definition, Mapping):
                continue
            type_name = definition.get("type", definition.get("Type"))
            refusal = refusal_for_type(type_name) if isinstance(type_name, str) else None
            if refusal is not None:
                raise Forbidden(refusal)


class Forbidden(TemplateError):
    """Heat's policy refusal (its ``Forbidden``): ``You are not authorized to use <policy>.``"""

    error_type = "Forbidden"

    def __init__(self, policy: str) -> None:
        super().__init__(f"You are not authorized to use {policy}.")
