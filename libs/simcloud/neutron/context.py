"""What a Neutron operation works with: a connection in a transaction, the simulator, the caller."""

from __future__ import annotations

import dataclasses

from libs.db import Conn
from libs.simcloud.auth import Auth
from libs.simcloud.errors import ApiError
from libs.simcloud.neutron import store
from libs.simcloud.neutron.bodies import Kind
from libs.simcloud.state import SimState


@dataclasses.dataclass(frozen=True)
class Op:
    conn: Conn
    state: SimState
    auth: Auth

    @property
    def scope(self) -> str | None:
        """The project whose objects the caller sees; None for an admin, who sees all."""
        return None if self.auth.is_admin else self.auth.project_id

    def owner(self, requested: object) -> str:
        """The project a new object belongs to: the caller's, or the one an admin names."""
        if isinstance(requested, str) and requested and self.auth.is_admin:
            return requested
        return self.auth.project_id

    async def check_quota(self, kind: Kind, project_id: str, adding: int = 1) -> None:
        """409 OverQuota, in Neutron's words, when ``adding`` more would pass the project's limit."""
        resource = store.QUOTA_KIND[kind]
        limit = (await store.quotas(self.conn, project_id))[resource]
        if limit >= 0 and await store.count(self.conn, kind, project_id) + adding > limit:
            raise ApiError(409, f"Quota exceeded for resources: ['{resource}'].", "OverQuota")
