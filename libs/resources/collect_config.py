"""Where a server's agent polls for its deployments: the ``os-collect-config`` section of its metadata.

Heat writes one of four shapes by the server's ``software_config_transport``; Ember serves only
its own API, so every transport gets the shape of ``POLL_SERVER_HEAT``: the ``heat`` collector,
reading the server resource's metadata from Ember's API (whose ``deployments`` are the derived
configs to run), then the ``local`` one. Ember makes no stack user: the credentials are null,
which Ember's API in noauth mode does not ask for.
"""

from __future__ import annotations

from typing import Any


def os_collect_config(*, api_url: str, project: str, stack_name: str, stack_id: str,
                      resource_name: str) -> dict[str, Any]:
    return {"collectors": ["heat", "local"],
            "heat": {"user_id": None, "password": None, "auth_url": f"{api_url}/identity/v3",
                     "project_id": project, "stack_id": f"{stack_name}/{stack_id}",
                     "resource_name": resource_name, "region_name": None}}


def server_metadata(collect: dict[str, Any], deployments: list[Any], given: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    """A SOFTWARE_CONFIG server's resource metadata: the template's, its deployments (the derived
    configs for it, by name) and ``os-collect-config``, which Ember's replaces (Heat merges its own
    over a template's)."""
    return {**(given or {}), "deployments": deployments, "os-collect-config": collect}
