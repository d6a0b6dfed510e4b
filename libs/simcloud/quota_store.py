"""A simulated service's per-project quota overrides: one table each (``simcloud.<service>_quotas``).

A project's limits are the service's defaults with its overrides on top; setting
writes overrides, resetting drops them all (back to the defaults).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from libs.db import Conn


@dataclasses.dataclass(frozen=True)
class QuotaTable:
    table: str  # schema-qualified, a constant of the simulator's own
    defaults: Mapping[str, int]

    async def limits(self, conn: Conn, project_id: str) -> dict[str, int]:
        limits = dict(self.defaults)
        rows = await conn.fetch(f"SELECT resource, quota FROM {self.table} WHERE project_id = $1", project_id)
        for r in rows:
            limits[r["resource"]] = r["quota"]
        return limits

    async def set(self, conn: Conn, project_id: str, limits: Mapping[str, int]) -> None:
        for resource, quota in limits.items():
            await conn.execute(f"INSERT INTO {self.table} (project_id, resource, quota) VALUES ($1, $2, $3)"
                               " ON CONFLICT (project_id, resource) DO UPDATE SET quota = excluded.quota",
                               project_id, resource, int(quota))

    async def reset(self, conn: Conn, project_id: str) -> None:
        await conn.execute(f"DELETE FROM {self.table} WHERE project_id = $1", project_id)
