"""``software_deployments``: configs deployed to servers, with their status and what the agent sent back."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from typing import Any, TypeVar

from libs.db import Conn
from libs.db.software_configs import ConfigRow

_COLUMNS = ("id, project, config_id, server_id, input_values, output_values, action, status,"
            " status_reason, stack_user_project_id, created_at, updated_at")


@dataclasses.dataclass(frozen=True)
class DeploymentRow:
    id: uuid.UUID
    project: str
    config_id: uuid.UUID
    server_id: str
    input_values: dict[str, Any]
    output_values: dict[str, Any]
    action: str
    status: str
    status_reason: str
    stack_user_project_id: str
    created_at: datetime.datetime
    updated_at: datetime.datetime | None


def _row(record: Any) -> DeploymentRow:
    return DeploymentRow(**dict(record))


async def insert(conn: Conn, *, project: str, config_id: uuid.UUID, server_id: str,
                 input_values: dict[str, Any], action: str, status: str, status_reason: str = "",
                 stack_user_project_id: str = "", deployment_id: uuid.UUID | None = None) -> DeploymentRow:
    """Store a deployment; with ``deployment_id`` given and stored already, the stored one is returned."""
    record = await conn.fetchrow(
        "INSERT INTO software_deployments (id, project, config_id, server_id, input_values, action, status,"
        " status_reason, stack_user_project_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
        f" ON CONFLICT (id) DO NOTHING RETURNING {_COLUMNS}",
        deployment_id or uuid.uuid4(), project, config_id, server_id, input_values, action, status,
        status_reason, stack_user_project_id)
    if record is None:
        record = await conn.fetchrow(f"SELECT {_COLUMNS} FROM software_deployments WHERE id = $1",
                                     deployment_id)
    assert record is not None
    return _row(record)


async def get(conn: Conn, deployment_id: uuid.UUID, project: str | None = None) -> DeploymentRow | None:
    record = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM software_deployments WHERE id = $1 AND ($2::text IS NULL OR project = $2)",
        deployment_id, project)
    return _row(record) if record else None


async def page(conn: Conn, project: str | None, *, server_id: str | None = None, limit: int | None = None,
               marker: uuid.UUID | None = None, with_stack_user: bool = False) -> list[DeploymentRow]:
    """Deployments oldest first, of a server if ``server_id``; ``project`` None: every project's.
    ``with_stack_user``: also those whose stack user project is ``project`` (what Heat shows it)."""
    records = await conn.fetch(
        f"SELECT {_COLUMNS} FROM software_deployments WHERE ($1::text IS NULL OR project = $1"
        " OR ($5::boolean AND stack_user_project_id = $1))"
        " AND ($2::text IS NULL OR server_id = $2) AND ($3::uuid IS NULL OR (created_at, id) >"
        " (SELECT created_at, id FROM software_deployments WHERE id = $3)) ORDER BY created_at, id LIMIT $4",
        project, server_id, marker, limit, with_stack_user)
    return [_row(r) for r in records]


async def count(conn: Conn, project: str) -> int:
    """The deployments of the project and of those whose stack user project it is (Heat's
    max_software_deployments_per_tenant counts them)."""
    value: int = await conn.fetchval(
        "SELECT count(*) FROM software_deployments WHERE project = $1 OR stack_user_project_id = $1", project)
    return value


async def update(conn: Conn, deployment_id: uuid.UUID, *, expect_status: str | None = None,
                 **changes: Any) -> DeploymentRow | None:
    """Change columns (config_id, input_values, output_values, action, status, status_reason);
    with ``expect_status``, only while the row has that status (a signal counts only while a
    deployment is IN_PROGRESS). None: no such row (or not in that status)."""
    allowed = {"config_id", "input_values", "output_values", "action", "status", "status_reason"}
    unknown = set(changes) - allowed
    if unknown:
        raise ValueError(f"not a deployment column: {sorted(unknown)}")
    names = sorted(changes)
    sets = ", ".join(f"{n} = ${i}" for i, n in enumerate(names, start=3))
    record = await conn.fetchrow(
        f"UPDATE software_deployments SET {sets}{', ' if sets else ''}updated_at = now()"
        f" WHERE id = $1 AND ($2::text IS NULL OR status = $2) RETURNING {_COLUMNS}",
        deployment_id, expect_status, *(changes[n] for n in names))
    return _row(record) if record else None


async def delete(conn: Conn, deployment_id: uuid.UUID) -> DeploymentRow | None:
    """Delete the deployment; the deleted row (None: there was none)."""
    record = await conn.fetchrow(f"DELETE FROM software_deployments WHERE id = $1 RETURNING {_COLUMNS}",
                                 deployment_id)
    return _row(record) if record else None


async def configs_of_server(conn: Conn, server_id: str, *, visible_to: str | None = None
                            ) -> list[tuple[DeploymentRow, ConfigRow]]:
    """Each deployment to the server with its (derived) config, by config name (Heat's metadata order);
    ``visible_to``: only the deployments of that project or whose stack user project it is."""
    records = await conn.fetch(
        "SELECT to_json(d) AS deployment, to_json(c) AS config FROM software_deployments d"
        " JOIN software_configs c ON c.id = d.config_id WHERE d.server_id = $1"
        " AND ($2::text IS NULL OR d.project = $2 OR d.stack_user_project_id = $2)"
        " ORDER BY c.name COLLATE \"C\", d.created_at, d.id", server_id, visible_to)
    return [(_from_json(DeploymentRow, r["deployment"]), _from_json(ConfigRow, r["config"])) for r in records]


_T = TypeVar("_T", DeploymentRow, ConfigRow)


def _from_json(kind: type[_T], value: dict[str, Any]) -> _T:
    # to_json renders uuids and timestamps as text: typed back here, one row per pair.
    fields = {f.name: value[f.name] for f in dataclasses.fields(kind)}
    for name in ("id", "config_id"):
        if name in fields:
            fields[name] = uuid.UUID(fields[name])
    for name in ("created_at", "updated_at"):
        if fields.get(name) is not None:
            fields[name] = datetime.datetime.fromisoformat(fields[name])
    return kind(**fields)
