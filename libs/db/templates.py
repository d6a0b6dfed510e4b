"""``raw_templates``: immutable desired states (template, files, environment)."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any

from libs.db import Conn


@dataclasses.dataclass(frozen=True)
class RawTemplate:
    id: uuid.UUID
    template: dict[str, Any]
    files: dict[str, str]
    environment: dict[str, Any]
    # For a provider template's nested stack: its parent resource's metadata and policies.
    facade: dict[str, Any] | None = None


async def insert(conn: Conn, template: Mapping[str, Any], files: Mapping[str, str],
                 environment: Mapping[str, Any], facade: Mapping[str, Any] | None = None, *,
                 checked_digest: str | None = None) -> uuid.UUID:
    template_id = uuid.uuid4()
    await conn.execute("INSERT INTO raw_templates (id, template, files, environment, facade, checked_digest)"
                       " VALUES ($1, $2, $3, $4, $5, $6)", template_id, dict(template), dict(files),
                       dict(environment), dict(facade) if facade is not None else None, checked_digest)
    return template_id


async def checked_digest(conn: Conn, template_id: uuid.UUID) -> str | None:
    """The digest of the request the desired state was checked from (libs/request_digest.py)."""
    digest: str | None = await conn.fetchval("SELECT checked_digest FROM raw_templates WHERE id = $1",
                                             template_id)
    return digest


async def get(conn: Conn, template_id: uuid.UUID) -> RawTemplate:
    row = await conn.fetchrow("SELECT id, template, files, environment, facade FROM raw_templates"
                              " WHERE id = $1", template_id)
    if row is None:
        raise LookupError(f"raw template {template_id} not found")
    return RawTemplate(**dict(row))


async def parameters_of(conn: Conn, template_id: uuid.UUID) -> RawTemplate:
    """The desired state as :func:`get` reads it, its resources and outputs left out: what an
    update is checked against unless it patches it (parameters, conditions, environment), read
    without the members of a group of 10^6."""
    row = await conn.fetchrow(
        "SELECT id, (SELECT coalesce(json_object_agg(key, value), '{}') FROM json_each(template)"
        "  WHERE key NOT IN ('resources', 'Resources', 'outputs', 'Outputs')) AS template,"
        " files, environment, facade FROM raw_templates WHERE id = $1", template_id)
    if row is None:
        raise LookupError(f"raw template {template_id} not found")
    return RawTemplate(**dict(row))


async def same_inputs(conn: Conn, template_id: uuid.UUID, files: Mapping[str, str],
                      environment: Mapping[str, Any], facade: Mapping[str, Any] | None) -> bool:
    """Whether the desired state ``template_id`` has these files, environment and facade (its
    template, which may be large, neither read nor compared)."""
    row = await conn.fetchrow("SELECT files, environment, facade FROM raw_templates WHERE id = $1",
                              template_id)
    return row is not None and (dict(row["files"]), dict(row["environment"]), row["facade"]) == (
        dict(files), dict(environment), dict(facade) if facade is not None else None)


async def environments(conn: Conn, template_ids: list[uuid.UUID]) -> dict[uuid.UUID, dict[str, Any]]:
    """The stored environments of these desired states (without their templates, which may be large)."""
    rows = await conn.fetch("SELECT id, environment FROM raw_templates WHERE id = ANY($1::uuid[])",
                            template_ids)
    return {r["id"]: r["environment"] for r in rows}
