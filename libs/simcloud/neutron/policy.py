"""Neutron's default policy on attributes only an admin may set (a member gets 403, as on a real cloud).

Pure. On create an attribute counts when it asks for more than the default (``router:external: false``
passes); on update its mere presence counts, as Neutron's policy engine has it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

from libs.simcloud.errors import ApiError
from libs.simcloud.neutron.bodies import Kind


class Action(enum.Enum):
    CREATE = "create"
    UPDATE = "update"


_PROVIDER = ("provider:network_type", "provider:physical_network", "provider:segmentation_id")


class _Any:
    """No value is harmless: the attribute's presence alone needs an admin."""


ANY = _Any()

# Per kind: the attributes only an admin may set, with the value that asks for nothing (on create).
ADMIN_ONLY: Mapping[Kind, Mapping[str, object]] = {
    Kind.NETWORK: {"shared": False, "router:external": False, "is_default": False, "segments": None,
                   **{name: None for name in _PROVIDER}},
    Kind.PORT: {"binding:host_id": "", "binding:profile": None},
    Kind.ROUTER: {"distributed": ANY, "ha": ANY},
}

# Within a router's external_gateway_info: what a member may not choose at all.
GATEWAY_ADMIN_ONLY = ("enable_snat", "external_fixed_ips")


def _asked(action: Action, value: object, harmless: object) -> bool:
    if action is Action.UPDATE or harmless is ANY:
        return True
    return value is not None and value not in (harmless, {})


def refused(kind: Kind, action: Action, request: Mapping[str, Any]) -> str | None:
    """The policy clause (in Neutron's words) a member's request fails, or None when it may."""
    verb = f"{action.value}_{kind.info.member}"
    wanted = ADMIN_ONLY.get(kind, {})
    rules = [f"rule:{verb}:{name}" for name, value in request.items()
             if name in wanted and _asked(action, value, wanted[name])]
    gateway = request.get("external_gateway_info")
    if kind is Kind.ROUTER and isinstance(gateway, dict):
        inner = [f"rule:{verb}:external_gateway_info:{name}"
                 for name in GATEWAY_ADMIN_ONLY if name in gateway]
        if inner:
            given = [f"rule:{verb}:external_gateway_info:network_id"] if "network_id" in gateway else []
            rules.append(f"(rule:{verb}:external_gateway_info and ({' and '.join(given + inner)}))")
    if not rules:
        return None
    return f"({' and '.join([f'rule:{verb}', *rules])}) is disallowed by policy"


def check(kind: Kind, action: Action, request: Mapping[str, Any], *, admin: bool) -> None:
    """403 PolicyNotAuthorized when a member asks for what only an admin may."""
    message = None if admin else refused(kind, action, request)
    if message is not None:
        raise ApiError(403, message, "PolicyNotAuthorized")
