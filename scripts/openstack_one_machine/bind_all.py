"""An ML2 mechanism driver that binds every port: Neutron without agents.

Runs inside the OpenStack venv (installed there as ``ember_bind_all`` with an entry
point in ``neutron.ml2.mechanism_drivers``). Neutron's own drivers bind a port only
for a host whose agent reported in; no agent runs here, so this one binds any port
that asks (a server's port once Nova sets its host) to the network's first segment
and marks it ACTIVE, which is what an agent would have done once the wire was up.
No packet flows: that is the point of the fake.
"""

from __future__ import annotations

from typing import Any

from neutron_lib.plugins.ml2 import api

VIF_TYPE = "ovs"
VIF_DETAILS: dict[str, Any] = {"port_filter": True, "connectivity": "l2"}


class BindAllDriver(api.MechanismDriver):  # type: ignore[misc]
    """Bind every port on its network's first segment, status ACTIVE."""

    def initialize(self) -> None:
        return None

    @property
    def connectivity(self) -> str:
        return "l2"

    def bind_port(self, context: Any) -> None:
        for segment in context.segments_to_bind:
            context.set_binding(segment[api.ID], VIF_TYPE, dict(VIF_DETAILS), status="ACTIVE")
            return
