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


async def insert(conn: Conn, template: Mapping[str, Any], files: Mapping[str, str],
                 environment: Mapping[str, Any]) -> uuid.UUID:
    template_id = uuid.uuid4()
    await conn.execute("INSERT INTO raw_templates (id, template, files, environment) VALUES ($1, $2, $3, $4)",
                       template_id, dict(template), dict(files), dict(environment))
    return template_id


async def get(conn: Conn, template_id: uuid.UUID) -> RawTemplate:
    row = await conn.fetchrow("SELECT id, template, files, environment FROM raw_templates WHERE id = $1",
                              template_id)
    if row is None:
        raise LookupError(f"raw template {template_id} not found")
    return RawTemplate(**dict(row))
