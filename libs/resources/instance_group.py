"""``OS::Heat::InstanceGroup``: ``Size`` servers made from a launch configuration, in a nested stack.

Heat makes each member an ``OS::Heat::ScaledResource`` (an ``AWS::EC2::Instance``)
with the properties of the ``AWS::AutoScaling::LaunchConfiguration`` that
``LaunchConfigurationName`` refers to. A launch configuration names a Glance
image and a Nova flavor, which Heat checks with those services before a stack
is stored: without a cloud no launch configuration validates, in Heat or in
Ember (which has no such type until it has a cloud). What this type does is
what Heat's does without one: it is listed with Heat's schema, and a stack
using it is refused before anything is stored, with Heat's reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, ClassVar

from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType
from libs.resources.properties import PropSchema
from libs.resources.steps import Failed, StepContext, StepResult
from libs.template.errors import StackValidationFailed
from libs.template.resolution import StackResolver, StaticResourceData

if TYPE_CHECKING:
    from libs.template.stack import StackDefinition

LAUNCH_CONFIGURATION = "LaunchConfigurationName"
# The launch configuration attribute Heat's InstanceGroup reads first when it makes its members.
_FIRST_READ = "BLOCK_DEVICE_MAPPINGS"


class InstanceGroup(ResourceType):
    """Servers made from a launch configuration; needs a cloud for the launch configuration."""

    type_name: ClassVar[str] = "OS::Heat::InstanceGroup"
    description: ClassVar[str] = (
        "Makes Size servers from an AWS::AutoScaling::LaunchConfiguration, in a nested stack.")
    update_policy_schema: ClassVar[Mapping[str, PropSchema]] = {
        "RollingUpdate": PropSchema("map", "How an update replaces servers, a batch at a time.", schema={
            "MinInstancesInService": PropSchema("integer", "The fewest servers in service.", default=0),
            "MaxBatchSize": PropSchema("integer", "The most servers to replace at once.", default=1),
            "PauseTime": PropSchema("string", "The wait between two batches (ISO 8601).", default="PT0S"),
        }),
    }
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "AvailabilityZones": PropSchema("list", "Not used.", required=True),
        LAUNCH_CONFIGURATION: PropSchema("string", "The launch configuration (get_resource of it).",
                                         required=True, update_allowed=True),
        "Size": PropSchema("integer", "How many servers to make.", required=True, update_allowed=True),
        "LoadBalancerNames": PropSchema("list", "AWS::ElasticLoadBalancing::LoadBalancer resources "
                                                "to add the servers to."),
        "Tags": PropSchema("list", "Tags of the servers.", schema=PropSchema("map", schema={
            "Key": PropSchema("string", "Tag key.", required=True),
            "Value": PropSchema("string", "Tag value.", required=True)})),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "InstanceList": AttrSchema("The servers' IP addresses, separated by commas.", "string"),
    }

    def validate_in_stack(self, name: str, definition: StackDefinition,
                          heat_class_of: Callable[[str], str]) -> None:
        # Before anything exists a resource's reference is its name, as Heat's.
        names = StaticResourceData({n: n for n in definition.resources})
        conf = StackResolver(definition, names).properties(name).get(LAUNCH_CONFIGURATION)
        if not conf:
            return
        if conf not in definition.resources:
            raise StackValidationFailed(f"{LAUNCH_CONFIGURATION} ({conf}) reference can not be found.",
                                        ("resources", name), error="ValueError")
        if conf not in definition.required(name):
            raise StackValidationFailed(
                f"{LAUNCH_CONFIGURATION} ({conf}) requires a reference to the configuration not just "
                "the name of the resource.", ("resources", name), error="ValueError")
        # Making the members reads the launch configuration's schema, which no other type has.
        raise StackValidationFailed(f"'{heat_class_of(conf)}' object has no attribute '{_FIRST_READ}'",
                                    ("resources", f"{name}<nested_stack>"), error="AttributeError")

    def start_create(self, ctx: StepContext) -> StepResult:
        # Validation refuses every stack that would get here (see validate_in_stack).
        return Failed(f"{LAUNCH_CONFIGURATION} must refer to an AWS::AutoScaling::LaunchConfiguration",
                      error="ValueError")
