"""``OS::Heat::ResourceChain``: resources of the types listed, each after the one before (or all at once).

Members are named by their position, ``"0"``, ``"1"``..., in a nested stack
made here, and have the same properties (``resource_properties``). With
``concurrent`` they do not wait for each other. The attributes are those of a
resource group: ``refs``, ``refs_map``, ``attributes``, ``resource.<n>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.properties import PropSchema
from libs.resources.resource_group import MemberStack, members_template
from libs.resources.steps import Nest, StepContext, StepResult


class ResourceChain(MemberStack):
    """A chain of resources of the listed types."""

    type_name: ClassVar[str] = "OS::Heat::ResourceChain"
    description: ClassVar[str] = (
        "Makes one resource of each listed type in a nested stack, each after the one before "
        "unless concurrent, all with the same properties.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="6.0.0")
    checks_member_types: ClassVar[bool] = True
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "resources": PropSchema("list", "The types of the resources, in order.", required=True,
                                update_allowed=True, schema=PropSchema("string", "A resource type.")),
        "concurrent": PropSchema("boolean", "Make them all at once instead of one after another.",
                                 default=False),
        "resource_properties": PropSchema("map", "The properties of every resource.", default={},
                                          update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "refs": AttrSchema("The references of the resources, in order.", "list"),
        "refs_map": AttrSchema("The references of the resources, by name.", "map"),
        "attributes": AttrSchema("An attribute of every resource, by name (get_attr with a path).", "map"),
    }

    def child_request(self, ctx: StepContext) -> Nest:
        props = ctx.properties
        resources: dict[str, Any] = {}
        for index, type_name in enumerate(props.get("resources") or []):
            member: dict[str, Any] = {"type": type_name}
            if props.get("resource_properties"):
                member["properties"] = dict(props["resource_properties"])
            if index and not props.get("concurrent"):
                member["depends_on"] = [str(index - 1)]
            resources[str(index)] = member
        return Nest("create", template=members_template(resources))

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.child_request(ctx)
