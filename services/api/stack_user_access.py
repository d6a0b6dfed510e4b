"""What a stack user may do in keystone mode (pure): Heat's ``deny_stack_user``, route by route.

A stack user's token (see libs.resources.stack_user) reaches three routes, each for its own
resource alone: the resource's metadata (os-collect-config's heat collector), the deployments
of its server (``ember agent``'s poll) and the resource's signal (heat-config-notify's
HEAT_SIGNAL); and, as Heat's ``stacks:lookup`` lets it, a stack found by name, which only
redirects to a route checked in turn. Everything else is refused as Heat refuses it, naming the
route's policy. A signal URL signed with the resource's secret reaches the signal route of that
resource alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from services.api.context import StackUserScope

_RESOURCE: Final = "/v1/{project_id}/stacks/{stack_name}/{stack_id}/resources/{resource_name}"
METADATA: Final = f"{_RESOURCE}/metadata"
SIGNAL: Final = f"{_RESOURCE}/signal"
SERVER_DEPLOYMENTS: Final = "/v1/{project_id}/software_deployments/metadata/{server_id}"
LOOKUPS: Final = frozenset({"/v1/{project_id}/stacks/{stack_name}",
                           "/v1/{project_id}/stacks/{stack_name}/{tail}"})
ROLE: Final = "heat_stack_user"


def _own_resource(scope: StackUserScope, match: Mapping[str, str]) -> bool:
    return match.get("stack_id") == scope.stack_id and match.get("resource_name") == scope.resource_name


def allows(scope: StackUserScope, method: str, route: str | None, match: Mapping[str, str]) -> bool:
    """Whether a stack user bound to ``scope`` may call ``method`` on the matched ``route``."""
    if (method, route) in (("GET", METADATA), ("HEAD", METADATA), ("POST", SIGNAL)):
        return _own_resource(scope, match)
    if method in ("GET", "HEAD") and route == SERVER_DEPLOYMENTS:
        return scope.physical_id is not None and match.get("server_id") == scope.physical_id
    return route in LOOKUPS


def signs(method: str, route: str | None) -> bool:
    """Whether a signed URL (no token) may reach ``route``: the signal route alone."""
    return method == "POST" and route == SIGNAL
