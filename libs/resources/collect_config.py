"""Where a server's agent polls for its deployments: the ``os-collect-config`` section of its metadata.

Heat writes one of four shapes by the server's ``software_config_transport``; Ember serves only
its own API, so every transport gets the shape of ``POLL_SERVER_HEAT``: the ``heat`` collector,
reading the server resource's metadata from Ember's API (whose ``deployments`` are the derived
configs to run), then the ``local`` one. The credentials are the server's stack user
(:mod:`libs.resources.stack_user`), which Ember's API in keystone mode asks for and in noauth
mode does not.
"""

from __future__ import annotations

import random
from typing import Any

from libs.resources import stack_user
from libs.resources.stack_user import StackUser

# What ``resource show`` gives in place of the password (Heat shows a server's ``show``, not this).
HIDDEN = "******"


def os_collect_config(*, api_url: str, project: str, stack_name: str, stack_id: str,
                      resource_name: str, user: StackUser) -> dict[str, Any]:
    return {"collectors": ["heat", "local"],
            "heat": {"user_id": user.id, "password": user.secret, "auth_url": f"{api_url}/identity/v3",
                     "project_id": project, "stack_id": f"{stack_name}/{stack_id}",
                     "resource_name": resource_name, "region_name": None}}


def server_metadata(collect: dict[str, Any], deployments: list[Any], given: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """A SOFTWARE_CONFIG server's resource metadata: the template's, its deployments (the derived
    configs for it, by name) and ``os-collect-config``, which Ember's replaces (Heat merges its own
    over a template's)."""
    return {**(given or {}), "deployments": deployments, "os-collect-config": collect}


def server_user(kept: Any, rng: random.Random) -> StackUser:
    """The user of the section a server kept (a create started again, a server made again), else a new one."""
    return user_of(kept) or stack_user.new(rng)


def user_of(collect: Any) -> StackUser | None:
    """The stack user an ``os-collect-config`` section names, if it names one."""
    heat = collect.get("heat") if isinstance(collect, dict) else None
    if not isinstance(heat, dict) or not isinstance(heat.get("user_id"), str) or not isinstance(
            heat.get("password"), str):
        return None
    return StackUser(id=heat["user_id"], secret=heat["password"])


def hidden(collect: Any) -> Any:
    """The section as ``resource show`` gives it: the password left out."""
    heat = collect.get("heat") if isinstance(collect, dict) else None
    if not isinstance(heat, dict) or heat.get("password") is None:
        return collect
    return {**collect, "heat": {**heat, "password": HIDDEN}}
