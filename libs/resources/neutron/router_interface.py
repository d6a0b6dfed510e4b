"""``OS::Neutron::RouterInterface``: a router's interface on a subnet, or on a given port.

Its physical id is Heat's ``<router id>:subnet_id=<id>`` (or ``:port_id=<id>``), recorded
with the add call, so a delete after a crash removes what may have been added. An add
whose answer was lost is checked against the router's ports before it is asked again
(adding twice is an error in Neutron).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, Service
from libs.engine.status import Action
from libs.resources.base import ResourceType
from libs.resources.cloud_steps import loads
from libs.resources.neutron import wire
from libs.resources.neutron.base import PHASE
from libs.resources.neutron.errors import PropertyConflict, PropertyUnspecified
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.properties import PropSchema
from libs.resources.steps import Call, Done, Failed, StepContext, StepResult
from libs.template.constraints import CustomConstraint

ROUTER = "router"
ROUTER_ID = "router_id"
SUBNET_ID = "subnet_id"
SUBNET = "subnet"
PORT_ID = "port_id"
PORT = "port"

ADD_KEY: Final = "add"
PORTS_KEY: Final = "ports"
REMOVE_KEY: Final = "remove"
IDS: Final = "ids"
# openstacksdk's argument for each key of the physical id (its old names are deprecated).
_SDK_ARGUMENT: Final = {SUBNET_ID: "subnet", PORT_ID: "port"}
# Hidden old names and the properties they stand for (Heat's translation rules).
_OLD_NAMES: Final = {ROUTER_ID: ROUTER, SUBNET_ID: SUBNET, PORT_ID: PORT}


def _hidden(constraint: str) -> PropSchema:
    return PropSchema("string", constraints=(CustomConstraint(constraint),), support_status="HIDDEN")


def parse_id(physical_id: str) -> tuple[str, str, str]:
    """``router:key=value`` (or the old ``router:subnet``) as (router, key, value)."""
    tokens = physical_id.replace("=", ":").split(":")
    if len(tokens) == 2:
        tokens.insert(1, SUBNET_ID)
    router, key, value = tokens[0], tokens[1], ":".join(tokens[2:])
    return router, key, value


class RouterInterface(ResourceType):
    """Joins a router to a subnet (Neutron makes the port) or to an existing port."""

    type_name: ClassVar[str] = "OS::Neutron::RouterInterface"
    renamed_properties: ClassVar[Mapping[str, str]] = _OLD_NAMES
    description: ClassVar[str] = (
        "An interface of a router on a subnet, or on an existing port: what joins a subnet's "
        "hosts to the router.")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        ROUTER: PropSchema("string", "The router, by name or id.", required=True,
                           constraints=(CustomConstraint("neutron.router"),)),
        ROUTER_ID: _hidden("neutron.router"),
        SUBNET_ID: _hidden("neutron.subnet"),
        SUBNET: PropSchema("string", "The subnet, by name or id; either it or port.",
                           constraints=(CustomConstraint("neutron.subnet"),)),
        PORT_ID: _hidden("neutron.port"),
        PORT: PropSchema("string", "The port, by name or id; either it or subnet.",
                         constraints=(CustomConstraint("neutron.port"),)),
    }

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        has_subnet, has_port = properties.get(SUBNET) is not None, properties.get(PORT) is not None
        if has_subnet and has_port:
            raise PropertyConflict(SUBNET, PORT)
        if not has_subnet and not has_port:
            raise PropertyUnspecified(SUBNET, PORT)

    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        return physical_id

    # ---- steps --------------------------------------------------------------------------------
    @staticmethod
    def _finds(properties: Mapping[str, Any]) -> tuple[CloudCall, ...]:
        refs = [Ref(Kind.ROUTER, properties.get(ROUTER) or ""),
                Ref(Kind.SUBNET, properties.get(SUBNET) or ""),
                Ref(Kind.PORT, properties.get(PORT) or "")]
        return wire.lookups(r for r in refs if r.value)

    @staticmethod
    def _target(properties: Mapping[str, Any], resolve: Resolver) -> tuple[str, str, str]:
        router = str(resolve(Kind.ROUTER, properties[ROUTER]))
        if properties.get(SUBNET):
            return router, SUBNET_ID, str(resolve(Kind.SUBNET, properties[SUBNET]))
        return router, PORT_ID, str(resolve(Kind.PORT, properties[PORT]))

    def start_create(self, ctx: StepContext) -> StepResult:
        finds = self._finds(ctx.properties)
        if finds:
            return Call(finds, data={PHASE: "lookup"})
        return self._add(ctx, {})

    def _add(self, ctx: StepContext, ids: Mapping[str, str]) -> StepResult:
        router, key, value = self._target(ctx.properties, Resolver(ids))
        call = CloudCall(ADD_KEY, Service.NETWORK, "add_interface_to_router", args=(router,),
                         kwargs={_SDK_ARGUMENT[key]: value})
        return Call((call,), physical_id=f"{router}:{key}={value}", data={PHASE: "add", IDS: wire.dumps(ids)})

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        phase = ctx.data.get(PHASE)
        if phase == "lookup":
            finds = self._finds(ctx.properties)
            ids = wire.found_ids(finds, ctx.answers)
            if ids is None:
                return Call(finds, data={PHASE: "lookup"})
            return ids if isinstance(ids, Failed) else self._add(ctx, ids)
        if phase == "add":
            return self._after_add(ctx)
        if phase == "adopt":
            return self._after_adopt(ctx)
        if phase == "remove":
            return self._after_remove(ctx)
        return Done()

    def _after_add(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(ADD_KEY)
        if answer is None:
            router, _, _ = parse_id(ctx.physical_id or "")
            listing = CloudCall(PORTS_KEY, Service.NETWORK, "ports", kwargs={"device_id": router})
            return Call((listing,), data={PHASE: "adopt"})
        if answer.error is not None:
            return wire.failed(answer.error)
        return Done(data={PHASE: None, IDS: None})

    def _after_adopt(self, ctx: StepContext) -> StepResult:
        router, key, value = parse_id(ctx.physical_id or "")
        answer = ctx.answers.get(PORTS_KEY)
        if answer is None:
            listing = CloudCall(PORTS_KEY, Service.NETWORK, "ports", kwargs={"device_id": router})
            return Call((listing,), data={PHASE: "adopt"})
        if answer.error is not None:
            return wire.failed(answer.error)
        for port in answer.value or ():
            view = wire.neutron_view(port)
            if key == PORT_ID and view.get("id") == value:
                return Done(data={PHASE: None, IDS: None})
            if key == SUBNET_ID and any(ip.get("subnet_id") == value for ip in view.get("fixed_ips") or ()):
                return Done(data={PHASE: None, IDS: None})
        return self._add(ctx, loads(ctx.data, IDS, {}))

    def start_delete(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Done()
        router, key, value = parse_id(ctx.physical_id)
        call = CloudCall(REMOVE_KEY, Service.NETWORK, "remove_interface_from_router", args=(router,),
                         kwargs={_SDK_ARGUMENT.get(key, key): value})
        return Call((call,), data={PHASE: "remove"})

    def _after_remove(self, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(REMOVE_KEY)
        if answer is None:
            return self.start_delete(ctx)
        if answer.error is not None and not answer.not_found:
            return wire.failed(answer.error)
        return Done(data={PHASE: None, IDS: None})
