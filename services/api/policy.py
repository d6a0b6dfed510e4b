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


class Forbidden(TemplateError):
    """Heat's policy refusal (its ``Forbidden``): ``You are not authorized to use <policy>.``"""

    error_type = "Forbidden"

    def __init__(self, policy: str) -> None:
        super().__init__(f"You are not authorized to use {policy}.")
