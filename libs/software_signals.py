"""A signal of a software deployment resource: its deployment row updated, and Heat's SIGNAL event.

One function for both ways a signal arrives: the API's ``POST .../resources/<name>/signal`` and
a NATS_SIGNAL answer published on the resource's JetStream subject (the worker's
``deployment-signals`` consumer, :func:`apply_published`).

The decision is :func:`libs.resources.deployment_signal.signalled`; this reads the row and the
config it runs, and writes what was decided only while the row is still IN_PROGRESS (a
compare-and-set: of two signals at once, or one delivered twice, one counts; the other is a
SIGNAL event that changed nothing). The resource's waiting step sees the row.
"""

from __future__ import annotations

import enum
import uuid
from typing import Any

import asyncpg

from libs.db import Conn, events, resources, software_configs, software_deployments, stacks
from libs.engine.status import Status
from libs.messaging.subjects import Names, principal_token, token_value
from libs.resources.deployment_signal import event_reason, signalled


class Applied(enum.Enum):
    """What a signal did."""

    # The deployment took it: COMPLETE or FAILED now.
    CHANGED = "changed"
    # The deployment was not waiting for one (already answered: a second signal, a redelivery).
    UNCHANGED = "unchanged"
    # The resource has no deployment (none made yet, or deleted): nothing done, no event.
    NO_DEPLOYMENT = "no deployment"
    # Nothing of the subject's project has that stack and resource (a published signal only).
    NOT_FOUND = "not found"


async def signal(conn: Conn, stack: stacks.StackRow, row: resources.ResourceRow, details: object) -> Applied:
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
        return Applied.NO_DEPLOYMENT
    async with conn.transaction():
        deployment = await software_deployments.get(conn, deployment_id, stack.project)
        if deployment is None:
            return Applied.NO_DEPLOYMENT
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
    return Applied.UNCHANGED if result is None else Applied.CHANGED


async def apply_published(pool: asyncpg.Pool, names: Names, subject: str, details: Any) -> Applied:
    """Apply a signal published on ``subject`` (:meth:`Names.signal`) to the deployment it names.

    The project is the subject's: a stack of another project is not found, whatever its id, so
    what an integration user may publish (its own project's subjects) is all it can touch.
    """
    parts = names.signal_parts(subject)
    if parts is None:
        return Applied.NOT_FOUND
    project, stack_token, resource = parts
    try:
        stack_id = uuid.UUID(stack_token)
    except ValueError:
        return Applied.NOT_FOUND
    async with pool.acquire() as conn:
        stack = await stacks.get(conn, stack_id)
        if stack is None or stack.deleted_at is not None or principal_token(stack.project) != project:
            return Applied.NOT_FOUND
        # A token is the name with some characters escaped: the row whose token it is.
        found = await resources.current_by_names(conn, stack.id, {resource, token_value(resource)})
        rows = [r for r in found.values() if principal_token(r.name) == resource]
        if not rows:
            return Applied.NOT_FOUND
        return await signal(conn, stack, rows[0], details)

