"""A deployment's outputs replaced by ``PUT /software_deployments/<id>`` after its resource finished:
the resource's attributes and its stack's outputs show them, as Heat's deployment reads its
attributes from its row each time.

The resource is the one the deployment's config names in its ``deploy_stack_id`` and
``deploy_resource_name`` inputs, while it is that resource's (its physical id) and no step of
it runs (a waiting step reads the row itself). A deployment made through the API has none.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from libs import resource_refresh
from libs.db import Conn, resources, software_configs, stacks
from libs.db.software_deployments import DeploymentRow
from libs.engine.status import Status
from libs.resources.registry import Registry
from libs.resources.software_deployment import SoftwareDeployment, with_outputs


def owner_of(inputs: Sequence[Mapping[str, Any]]) -> tuple[uuid.UUID, str] | None:
    """The stack id and resource name a derived config's ``deploy_*`` inputs name, if any."""
    values = {i.get("name"): i.get("value") for i in inputs}
    path, name = values.get("deploy_stack_id"), values.get("deploy_resource_name")
    if not isinstance(path, str) or not isinstance(name, str):
        return None
    try:
        return uuid.UUID(path.rsplit("/", 1)[-1]), name
    except ValueError:
        return None


async def follow(conn: Conn, registry: Registry, deployment: DeploymentRow) -> None:
    """Bring the deployment's resource's attributes, and its stack's outputs, to its outputs now
    (in the caller's transaction)."""
    config = await software_configs.get(conn, deployment.config_id)
    owner = owner_of(config.config.get("inputs") or ()) if config is not None else None
    if owner is None:
        return
    stack_id, name = owner
    row = (await resources.current_by_names(conn, stack_id, [name])).get(name)
    if row is None or row.physical_id != str(deployment.id) or row.status == Status.IN_PROGRESS:
        return
    stack = await stacks.get(conn, stack_id)
    if stack is None:
        return
    want = await resource_refresh.stack_desired(conn, stack)
    try:
        plugin = registry.implementing(row.type, resource_name=row.name,
                                       environment=want.environment.registry if want is not None else None)
    except KeyError:
        return
    if not isinstance(plugin, SoftwareDeployment):
        return
    outputs = await resource_refresh.refresh(conn, stack, want, row=row, plugin=plugin,
                                             data=with_outputs(row.data, deployment.output_values))
    if outputs is not None:  # a deployment group's member: the group's attributes follow
        await resource_refresh.refresh_parent(conn, stack, outputs, registry)
