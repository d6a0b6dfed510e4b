"""``OS::Nova::Flavor``: a Nova flavor (administrators only, by Nova's default policy).

Made by one call, then its extra specs and project access are set; after a lost
create answer it is found by its name. Extra specs and the projects of a private
flavor change in place; anything else replaces it, as in Heat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.cloud.calls import CloudCall, ErrorKind
from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.cloud_object import CREATED, DELETED, FOUND, CloudObject
from libs.resources.cloud_steps import call, cloud_failure, compute, dumps, loads
from libs.resources.properties import PropSchema
from libs.resources.steps import Done, StepContext, StepResult
from libs.template.constraints import CustomConstraint

TENANTS = "tenants"
FLAVOR_ID = "flavorid"
NAME = "name"
RAM = "ram"
VCPUS = "vcpus"
DISK = "disk"
SWAP = "swap"
EPHEMERAL = "ephemeral"
RXTX_FACTOR = "rxtx_factor"
EXTRA_SPECS = "extra_specs"
IS_PUBLIC = "is_public"


class Flavor(CloudObject):
    """A Nova flavor."""

    type_name: ClassVar[str] = "OS::Nova::Flavor"
    heat_class: ClassVar[str | None] = "NovaFlavor"
    description: ClassVar[str] = (
        "A Nova flavor: the virtual hardware (RAM, vCPUs, disks) servers are booted with; public, "
        "or private to the projects it names.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        TENANTS: PropSchema("list", "Projects (names or ids) a private flavor is shared with.",
                            update_allowed=True, default=[],
                            schema=PropSchema("string", constraints=(CustomConstraint("keystone.project"),))),
        FLAVOR_ID: PropSchema("string", "The flavor's id; generated when omitted."),
        NAME: PropSchema("string", "The flavor's name; the physical name when omitted."),
        RAM: PropSchema("integer", "Memory in MB.", required=True),
        VCPUS: PropSchema("integer", "Number of virtual CPUs.", required=True),
        DISK: PropSchema("integer", "Root disk size in GB (0: the image's size).", default=0),
        SWAP: PropSchema("integer", "Swap space in MB.", default=0),
        EPHEMERAL: PropSchema("integer", "Ephemeral disk size in GB.", default=0),
        RXTX_FACTOR: PropSchema("number", "Network bandwidth factor.", default=1.0),
        EXTRA_SPECS: PropSchema("map", "Key/value extra specs.", update_allowed=True),
        IS_PUBLIC: PropSchema("boolean", "Whether every project may use it.", default=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        IS_PUBLIC: AttrSchema("Whether the flavor is public.", "boolean"),
        EXTRA_SPECS: AttrSchema("The flavor's extra specs.", "map"),
    }

    def flavor_name(self, ctx: StepContext) -> str:
        return ctx.properties.get(NAME) or self.physical_resource_name(ctx)

    def create_call(self, ctx: StepContext) -> CloudCall:
        props = ctx.properties
        kwargs: dict[str, Any] = {"name": self.flavor_name(ctx), "ram": props[RAM], "vcpus": props[VCPUS],
                                  "disk": props[DISK], "swap": props[SWAP], "ephemeral": props[EPHEMERAL],
                                  "rxtx_factor": props[RXTX_FACTOR], "is_public": props[IS_PUBLIC]}
        if props.get(FLAVOR_ID):
            kwargs["id"] = props[FLAVOR_ID]
        return compute(CREATED, "create_flavor", **kwargs)

    def find_call(self, ctx: StepContext) -> CloudCall:
        return compute(FOUND, "find_flavor", self.flavor_name(ctx), ignore_missing=True)

    def found(self, ctx: StepContext, answer: Any) -> Mapping[str, Any] | None:
        return answer if isinstance(answer, Mapping) else None

    def get_call(self, physical_id: str) -> CloudCall | None:
        return compute(FOUND, "get_flavor", physical_id)

    def delete_call(self, physical_id: str) -> CloudCall:
        return compute(DELETED, "delete_flavor", physical_id, ignore_missing=True)

    def _settings(self, flavor_id: str, props: Mapping[str, Any], old: Mapping[str, Any] | None
                  ) -> list[CloudCall]:
        calls: list[CloudCall] = []
        old_specs = (old or {}).get(EXTRA_SPECS) or {}
        new_specs = props.get(EXTRA_SPECS) or {}
        if old is None or old_specs != new_specs:
            calls += [compute(f"unset_{i}", "delete_flavor_extra_specs_property", flavor_id, key)
                      for i, key in enumerate(sorted(set(old_specs) - set(new_specs)))]
            if new_specs:
                calls.append(compute("specs", "create_flavor_extra_specs", flavor_id, dict(new_specs)))
        if not props[IS_PUBLIC]:
            before = set((old or {}).get(TENANTS) or ())
            after = set(props.get(TENANTS) or ())
            calls += [compute(f"remove_{i}", "flavor_remove_tenant_access", flavor_id, t)
                      for i, t in enumerate(sorted(before - after))]
            calls += [compute(f"add_{i}", "flavor_add_tenant_access", flavor_id, t)
                      for i, t in enumerate(sorted(after - before))]
        return calls

    def after_create(self, ctx: StepContext, made: Mapping[str, Any], adopted: bool) -> StepResult:
        flavor_id = self.physical_id_of(made)
        data = {IS_PUBLIC: dumps(bool(made.get("is_public", ctx.properties[IS_PUBLIC])))}
        calls = self._settings(flavor_id, ctx.properties, None)
        if not calls:
            return Done(physical_id=flavor_id, data={**data, "phase": None})
        return call("settings", *calls, physical_id=flavor_id,
                    data={**data, "keys": dumps([c.key for c in calls])})

    def more_create(self, ctx: StepContext, step: str) -> StepResult:
        return self._after_settings(ctx, lambda: self.after_create(ctx, {"id": ctx.physical_id}, True))

    def _after_settings(self, ctx: StepContext, again: Any) -> StepResult:
        keys = loads(ctx.data, "keys", [])
        if not all(k in ctx.answers for k in keys):
            result: StepResult = again()  # lost answers: these calls are safe to make again
            return result
        for key in keys:
            error = ctx.answers[key].error
            if error is not None and error.kind is not ErrorKind.CONFLICT:
                return cloud_failure(error)
        return Done(data={"phase": None, "keys": None})

    def start_update(self, ctx: StepContext) -> StepResult:
        calls = self._settings(str(ctx.physical_id), ctx.properties, ctx.old_properties)
        if not calls:
            return Done()
        return call("settings", *calls, data={"keys": dumps([c.key for c in calls])})

    def check_other(self, action: Action, ctx: StepContext, step: str) -> StepResult:
        if action is Action.UPDATE:
            return self._after_settings(ctx, lambda: self.start_update(ctx))
        return Done(data={"phase": None})

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if physical_id is None:
            return None
        if name == IS_PUBLIC:
            return loads(data, IS_PUBLIC, properties.get(IS_PUBLIC))
        return dict(properties.get(EXTRA_SPECS) or {})
