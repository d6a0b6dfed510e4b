"""``OS::Neutron::FloatingIPAssociation``: puts an existing floating IP on a port.

Setting a floating IP's port is idempotent, so a lost answer is simply asked again.
Moving to another floating IP first takes the old one off the port (Neutron refuses
two floating IPs on one fixed address), then puts the new one on.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, Service
from libs.engine.status import Action
from libs.resources.base import ResourceType
from libs.resources.neutron import wire
from libs.resources.neutron.base import PHASE
from libs.resources.properties import PropSchema
from libs.resources.steps import Call, Done, StepContext, StepResult
from libs.template.constraints import CustomConstraint

FLOATINGIP_ID = "floatingip_id"
PORT_ID = "port_id"
FIXED_IP_ADDRESS = "fixed_ip_address"

SET_KEY: Final = "associate"
UNSET_KEY: Final = "dissociate"


def _associate(floatingip_id: str, port_id: Any, fixed_ip_address: Any) -> CloudCall:
    return CloudCall(SET_KEY, Service.NETWORK, "update_ip", args=(floatingip_id,),
                     kwargs={PORT_ID: port_id, FIXED_IP_ADDRESS: fixed_ip_address})


def _dissociate(floatingip_id: str) -> CloudCall:
    return CloudCall(UNSET_KEY, Service.NETWORK, "update_ip", args=(floatingip_id,), kwargs={PORT_ID: None})


class FloatingIPAssociation(ResourceType):
    """The association of a floating IP with a port (and one of its addresses)."""

    type_name: ClassVar[str] = "OS::Neutron::FloatingIPAssociation"
    description: ClassVar[str] = "Puts an existing floating IP on a port that has at least one IP address."
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        FLOATINGIP_ID: PropSchema("string", "The floating IP's id.", required=True, update_allowed=True),
        PORT_ID: PropSchema("string", "The port, which has at least one IP address.", required=True,
                            update_allowed=True, constraints=(CustomConstraint("neutron.port"),)),
        FIXED_IP_ADDRESS: PropSchema("string", "Which of the port's addresses, if it has several.",
                                     update_allowed=True, constraints=(CustomConstraint("ip_addr"),)),
    }

    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        return physical_id

    def _set(self, ctx: StepContext) -> CloudCall:
        props = ctx.properties
        return _associate(props[FLOATINGIP_ID], props[PORT_ID], props.get(FIXED_IP_ADDRESS))

    def start_create(self, ctx: StepContext) -> StepResult:
        return Call((self._set(ctx),), physical_id=self.physical_resource_name(ctx), data={PHASE: "set"})

    def start_update(self, ctx: StepContext) -> StepResult:
        old = ctx.old_properties or {}
        if old.get(FLOATINGIP_ID) and old[FLOATINGIP_ID] != ctx.properties[FLOATINGIP_ID]:
            return Call((_dissociate(old[FLOATINGIP_ID]),), data={PHASE: "unset_old"})
        return Call((self._set(ctx),), data={PHASE: "set"})

    def start_delete(self, ctx: StepContext) -> StepResult:
        if ctx.physical_id is None:
            return Done()
        return Call((_dissociate(ctx.properties[FLOATINGIP_ID]),), data={PHASE: "unset"})

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        phase = ctx.data.get(PHASE)
        key = UNSET_KEY if phase in ("unset", "unset_old") else SET_KEY
        answer = ctx.answers.get(key)
        if answer is None:  # lost: setting the port again does no harm
            if phase == "set":
                return Call((self._set(ctx),), data={PHASE: "set"})
            if phase == "unset_old":
                return self.start_update(ctx)
            return self.start_delete(ctx)
        if answer.error is not None and not (key == UNSET_KEY and answer.not_found):
            return wire.failed(answer.error)
        if phase == "unset_old":
            return Call((self._set(ctx),), data={PHASE: "set"})
        return Done(data={PHASE: None})
