"""A signal of a software deployment resource: its deployment row updated, and Heat's SIGNAL event.

The decision is :func:`libs.resources.deployment_signal.signalled`; this reads the row and the
config it runs, and writes what was decided only while the row is still IN_PROGRESS (a
compare-and-set: of two signals at once, one counts). The resource's waiting step sees the row.
"""

from __future__ import annotations

import uuid

from libs.db import Conn, events, resources, software_configs, software_deployments, stacks
from libs.engine.status import Status
from libs.resources.deployment_signal import event_reason, signalled


async def signal(conn: Conn, stack: stacks.StackRow, row: resources.ResourceRow, details: object) -> None:
    """Apply ``details`` to the resource's deployment and write the SIGNAL event.

    A resource being replaced passes it on to its replacement. A resource with no deployment
    (none made yet, or deleted through the API) takes the signal and does nothing with it, as
    Heat's, whose signals fail after the answer, without an event.
    """
    # Heat's signal loads the newest resource of that name: a replacement being made, if any.
    making = await resources.unmade_replacement(conn, row.id)
    if making is not None and making.physical_id is not None:
        row = making
    try:
        deployment_id = uuid.UUID(row.physical_id or "")
    except ValueError:
        return
    async with conn.transaction():
        deployment = await software_deployments.get(conn, deployment_id, stack.project)
        if deployment is None:
            return
        config = await software_configs.get(conn, deployment.config_id)
        outputs = (config.config.get("outputs") or []) if config is not None else []
        result = signalled(str(deployment_id), deployment.status, deployment.output_values, outputs,
                           details)
        if result is not None and await software_deployments.update(
                conn, deployment_id, expect_status=Status.IN_PROGRESS, output_values=result.output_values,
                status=result.status, status_reason=result.status_reason) is None:
            result = None  # another signal took it first
        await events.add(conn, stack_id=stack.id, resource_name=row.name,
                         physical_resource_id=row.physical_id, resource_type=row.type, action="SIGNAL",
                         status=row.status, reason=event_reason(result, details))
