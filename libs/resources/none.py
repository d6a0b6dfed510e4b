"""``OS::Heat::None``: a placeholder that stands in for any other type.

Environments map real types onto it (``OS::Nova::Server: OS::Heat::None``)
to stub them out, so it must take whatever properties the real type had,
answer every attribute, and never update or replace whatever changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from typing import Any, ClassVar, Final

from libs.resources.base import ResourceType, SupportStatus
from libs.resources.steps import Done, StepContext, StepResult
from libs.template.constraints import CustomConstraints

# Marks a resource created as a placeholder, so deleting it touches nothing.
IS_PLACEHOLDER: Final = "is_placeholder"


class NoneResource(ResourceType):
    """Accepts anything, does nothing, and resolves every attribute to None."""

    type_name: ClassVar[str] = "OS::Heat::None"
    description: ClassVar[str] = (
        "A resource that does nothing. Map any resource type to it in an environment to "
        "leave that resource out: it accepts any properties, every attribute is null, and "
        "it is never updated or replaced.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="5.0.0")
    never_updates: ClassVar[bool] = True
    attributes_open: ClassVar[bool] = True
    ignores_properties: ClassVar[bool] = True

    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str,
                 resource_section: str = "resources", properties_section: str = "properties",
                 strict_values: bool = True, custom_constraints: CustomConstraints | None = None,
                 unchecked: Collection[str] = ()) -> dict[str, Any]:
        # The stubbed type's properties are neither checked nor kept.
        return {}

    def start_create(self, ctx: StepContext) -> StepResult:
        # A redelivered step finds the id it already recorded.
        physical_id = ctx.physical_id or str(uuid.UUID(int=ctx.rng.getrandbits(128), version=4))
        return Done(physical_id=physical_id, data={IS_PLACEHOLDER: "True"})

    def needs_update(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any],
                     definition_changed: bool = False) -> bool:
        return False

    def needs_replace(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any]) -> bool:
        return False

    def has_attribute(self, name: str) -> bool:
        return True
