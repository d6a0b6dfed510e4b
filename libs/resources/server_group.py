"""``OS::Nova::ServerGroup``: a Nova server group (affinity or anti-affinity of its servers).

Made by one call, named by ``name`` or the physical name; after a lost create answer
it is found by that name in the project's server groups. Every property change
replaces it, as in Heat.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.cloud.calls import CloudCall
from libs.resources.base import SupportStatus
from libs.resources.cloud_object import CREATED, DELETED, FOUND, CloudObject
from libs.resources.cloud_steps import compute
from libs.resources.properties import PropSchema
from libs.resources.steps import StepContext
from libs.template.constraints import AllowedValues

NAME = "name"
POLICIES = "policies"
RULES = "rules"
POLICY_NAMES = ("anti-affinity", "affinity", "soft-anti-affinity", "soft-affinity")


class ServerGroup(CloudObject):
    """A Nova server group."""

    type_name: ClassVar[str] = "OS::Nova::ServerGroup"
    description: ClassVar[str] = (
        "A Nova server group: servers booted in it (scheduler hint ``group``) land on the same "
        "host or on different hosts, as its policy says.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        NAME: PropSchema("string", "The group's name; the physical name when omitted."),
        POLICIES: PropSchema("list", "The placement policy (one).", default=["anti-affinity"],
                             constraints=(AllowedValues(POLICY_NAMES),), schema=PropSchema("string")),
        RULES: PropSchema("map", "Rules of the policy.", schema={
            "max_server_per_host": PropSchema("number", "Most servers of the group on one host "
                                              "(anti-affinity).")}),
    }

    def group_name(self, ctx: StepContext) -> str:
        return ctx.properties.get(NAME) or self.physical_resource_name(ctx)

    def create_call(self, ctx: StepContext) -> CloudCall:
        kwargs: dict[str, Any] = {"name": self.group_name(ctx), "policies": list(ctx.properties[POLICIES])}
        rules = {k: v for k, v in (ctx.properties.get(RULES) or {}).items() if v is not None}
        if rules:
            # Rules need microversion 2.64, where a group has one policy.
            kwargs = {"name": kwargs["name"], "policy": kwargs["policies"][0], "rules": rules}
        return compute(CREATED, "create_server_group", **kwargs)

    def find_call(self, ctx: StepContext) -> CloudCall:
        return compute(FOUND, "server_groups")

    def found(self, ctx: StepContext, answer: Any) -> Mapping[str, Any] | None:
        name = self.group_name(ctx)
        return next((g for g in answer or () if isinstance(g, Mapping) and g.get("name") == name), None)

    def get_call(self, physical_id: str) -> CloudCall | None:
        return compute(FOUND, "get_server_group", physical_id)

    def delete_call(self, physical_id: str) -> CloudCall:
        return compute(DELETED, "delete_server_group", physical_id, ignore_missing=True)
