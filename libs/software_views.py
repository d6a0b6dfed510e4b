"""Software configs and deployments as Heat's API shows them, and a server's ``deployments`` list.

The list is what a server's agent reads (Heat's os-collect-config reads it from
the server resource's metadata, ``GET .../software_deployments/metadata/<server>``
serves it too): each config deployed to the server, as Heat shows a config,
ordered by config name. A derived config also carries ``ember_hash``, the hash
of all its derived data, by which Ember's agent runs each exactly once.
"""

from __future__ import annotations

import datetime
from typing import Any

from libs.db import Conn, software_deployments
from libs.db.software_configs import ConfigRow
from libs.db.software_deployments import DeploymentRow

# Heat's key order of a stored input and output, whoever wrote the row (a derived config's writer too).
_INPUT_KEYS = ("name", "description", "type", "default", "replace_on_change", "value")
_OUTPUT_KEYS = ("name", "description", "type", "error_output")


def _isotime(at: datetime.datetime) -> str:
    return at.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _in_order(items: Any, keys: tuple[str, ...]) -> Any:
    if not isinstance(items, list):
        return items or []
    return [{**{k: item[k] for k in keys if k in item}, **item} if isinstance(item, dict) else item
            for item in items]


def config_view(row: ConfigRow, *, detail: bool = True, with_project: bool = False) -> dict[str, Any]:
    """Heat's ``format_software_config``: a list shows no body, an admin's list shows the project."""
    # A name or group the request left out is stored as "": Heat shows null there.
    shown: dict[str, Any] = {"id": str(row.id), "name": row.name or None, "group": row.group or None,
                             "creation_time": _isotime(row.created_at)}
    if detail:
        body = row.config
        shown.update(config=body.get("config"), inputs=_in_order(body.get("inputs"), _INPUT_KEYS),
                     outputs=_in_order(body.get("outputs"), _OUTPUT_KEYS), options=body.get("options") or {})
    if with_project:
        shown["project"] = row.project
    return shown


def deployment_view(row: DeploymentRow) -> dict[str, Any]:
    """Heat's ``format_software_deployment``, its keys in Heat's order.

    Heat's ``output_values`` are null until outputs arrive, and never empty after (an update
    skips an empty map; a signal always brings the deploy_* outputs): Ember's ``{}`` is that null.
    """
    shown: dict[str, Any] = {
        "id": str(row.id), "server_id": row.server_id, "input_values": row.input_values,
        "output_values": row.output_values or None, "action": row.action or None,
        "status": row.status or None, "status_reason": row.status_reason, "config_id": str(row.config_id),
        "creation_time": _isotime(row.created_at)}
    if row.updated_at is not None:
        shown["updated_time"] = _isotime(row.updated_at)
    return shown


def metadata_item(config: ConfigRow) -> dict[str, Any]:
    shown = config_view(config)
    if config.hash is not None:
        shown["ember_hash"] = config.hash
    return shown


async def server_deployments(conn: Conn, server_id: str, project: str | None) -> list[dict[str, Any]]:
    """The configs deployed to the server, by config name, of the deployments ``project`` may see
    (its own and those whose stack user project it is; None: every project's, an admin's view)."""
    pairs = await software_deployments.configs_of_server(conn, server_id, visible_to=project)
    return [metadata_item(config) for _, config in pairs]
