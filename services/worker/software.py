"""Software configs and deployments, as the worker reads them for a software type's step and stores
what the step asked for (:class:`~libs.resources.steps.Store`).

Everything one ``Store`` asks for happens in the caller's transaction, with the row's record of
it: a step killed half-way stored nothing, and one run again finds its rows and stores nothing
twice (config and deployment ids are the plugin's, stable for the step).
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

from libs import software_views
from libs.db import Conn, drift, software_configs, software_deployments
from libs.engine.status import Status
from libs.errors import is_transient
from libs.messaging import deployments
from libs.messaging.bus import Bus
from libs.resources.software_deployment import CANCELLED_REASON
from libs.resources.steps import Software, SoftwareReads, Store
from libs.telemetry import logs

log = logs.logger("worker")


def _uuid(text: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(text) if text else None
    except ValueError:
        return None  # an id that is no uuid names nothing stored


def config_view(row: software_configs.ConfigRow) -> dict[str, Any]:
    body = row.config
    return {"id": str(row.id), "name": row.name, "group": row.group, "config": body.get("config"),
            "inputs": body.get("inputs") or [], "outputs": body.get("outputs") or [],
            "options": body.get("options") or {}, "hash": row.hash}


def deployment_view(row: software_deployments.DeploymentRow) -> dict[str, Any]:
    return {"id": str(row.id), "server_id": row.server_id, "config_id": str(row.config_id),
            "input_values": row.input_values, "output_values": row.output_values, "action": row.action,
            "status": row.status, "status_reason": row.status_reason}


async def state(conn: Conn, project: str, reads: SoftwareReads) -> Software:
    """What is stored of what a step reads: the project's configs by id, the deployment, its server."""
    configs: dict[str, dict[str, Any]] = {}
    for name in reads.configs:
        config_id = _uuid(name)
        found = await software_configs.get(conn, config_id, project) if config_id else None
        if found is not None:
            configs[name] = config_view(found)
    deployment_id = _uuid(reads.deployment)
    row = await software_deployments.get(conn, deployment_id, project) if deployment_id else None
    server = row.server_id if row is not None else reads.server
    gone = bool(server) and await drift.known_gone(conn, project, str(server))
    return Software(configs=configs, deployment=deployment_view(row) if row is not None else None,
                    server_gone=gone)


async def update_state(conn: Conn, project: str, reads: SoftwareReads) -> Software:
    """What an update's replace-or-in-place decision reads: the step's reads, and the config the
    deployment ran last (whose inputs the new ones are compared with)."""
    found = await state(conn, project, reads)
    last = str(found.deployment["config_id"]) if found.deployment is not None else None
    if last is None or last in found.configs:
        return found
    row = await software_configs.get(conn, uuid.UUID(last), project)
    if row is None:
        return found
    return dataclasses.replace(found, configs={**found.configs, last: config_view(row)})


async def store(conn: Conn, project: str, request: Store) -> set[str]:
    """Carry ``request`` out (in the caller's transaction); the servers whose deployments changed."""
    servers: set[str] = set()
    for config in request.configs:
        await software_configs.insert(conn, project=project, name=config.name, group=config.group,
                                      config=dict(config.config), hash=config.hash,
                                      config_id=uuid.UUID(config.id))
    wanted = request.deployment
    if wanted is not None:
        deployment_id, config_id = uuid.UUID(wanted.id), uuid.UUID(wanted.config_id)
        existing = await software_deployments.get(conn, deployment_id)
        servers.add(wanted.server_id)
        if existing is None:
            await software_deployments.insert(
                conn, project=project, config_id=config_id, server_id=wanted.server_id,
                input_values=dict(wanted.input_values), action=wanted.action, status=wanted.status,
                status_reason=wanted.status_reason, deployment_id=deployment_id)
        elif existing.config_id != config_id:
            await software_deployments.update(
                conn, deployment_id, config_id=config_id, input_values=dict(wanted.input_values),
                action=wanted.action, status=wanted.status, status_reason=wanted.status_reason)
            # The config it pointed at before goes, as Heat's deployment deletes its last derived one.
            await software_configs.delete(conn, existing.config_id)
    removed = _uuid(request.removed_deployment)
    gone = await software_deployments.delete(conn, removed) if removed is not None else None
    if gone is not None:
        servers.add(gone.server_id)
    for name in request.removed_configs:
        removed_config = _uuid(name)
        if removed_config is not None:
            await software_configs.delete(conn, removed_config)
    return servers


async def cancel(conn: Conn, deployment: str | None) -> str | None:
    """Fail the deployment if it still waits for its server (its resource's action was abandoned);
    the server whose deployments changed, if any."""
    deployment_id = _uuid(deployment)
    if deployment_id is None:
        return None
    failed = await software_deployments.update(conn, deployment_id, expect_status=Status.IN_PROGRESS,
                                               status=Status.FAILED, status_reason=CANCELLED_REASON)
    return failed.server_id if failed is not None else None


async def push(conn: Conn, bus: Bus, project: str, server_id: str) -> None:
    """Send the server's agent its derived configs as the API serves them, so it need not wait for
    its next poll; a push lost costs that poll, no more."""
    try:
        listed = await software_views.server_deployments(conn, server_id, project)
        await deployments.publish(bus, project, server_id, listed)
    except Exception as exc:
        if not is_transient(exc):
            raise
        # The agent polls anyway: a step whose rows are stored does not fail for this.
        log.warning("the deployments of server %s were not pushed: %s", server_id, exc)
