"""The stacks ``bench.scale`` submits, and the phases each goes through: pure data, no I/O.

Three shapes of N ``OS::Heat::None``:

* ``flat``:   N resources in one template;
* ``group``:  one ``OS::Heat::ResourceGroup`` of N members (its nested stack holds them);
* ``groups``: N/1000 groups of 1000 in one template, each group a nested stack of its own.

The update of one resource: in a flat template, one resource's ``value`` changes.
A group's members cannot differ from each other but by ``%index%``: Heat
resolves ``resource_def``'s functions in the group, before it puts each index
in, so no function can pick one member out, and a provider template taking the
index changes every member's properties when its input changes. What Heat
gives a user to change one member by name is ``removal_policies``: the member
listed is removed and, the count being unchanged, a new one (the next unused
index) is made in its place. That is the group's update here (in the first
group, for ``groups``): one member deleted, one created.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Any

VERSION = "2016-10-14"
# Members per group of the ``groups`` shape (the issue's 1,000 groups of 1,000 for 10^6).
GROUP_SIZE = 1000
# The member a group's one-member update replaces.
REPLACED = "7"


class Shape(enum.StrEnum):
    FLAT = "flat"
    GROUP = "group"
    GROUPS = "groups"


class Phase(enum.StrEnum):
    CREATE = "create"
    UPDATE_SAME = "update-same"
    UPDATE_ONE = "update-one"
    # A second no-change update, after the one-member update (groups: with the removal policy).
    UPDATE_SAME_AFTER = "update-same-2"
    DELETE = "delete"

    @property
    def action(self) -> str:
        """The stack action this phase ends in (``<ACTION>_COMPLETE``)."""
        return {Phase.CREATE: "CREATE", Phase.DELETE: "DELETE"}.get(self, "UPDATE")


def phases(shape: Shape) -> tuple[Phase, ...]:
    if shape is Shape.FLAT:
        return (Phase.CREATE, Phase.UPDATE_SAME, Phase.UPDATE_ONE, Phase.DELETE)
    return (Phase.CREATE, Phase.UPDATE_SAME, Phase.UPDATE_ONE, Phase.UPDATE_SAME_AFTER, Phase.DELETE)


@dataclasses.dataclass(frozen=True)
class Workload:
    shape: Shape
    size: int

    @property
    def label(self) -> str:
        return f"{self.shape} {self.size}"

    def template(self, phase: Phase) -> dict[str, Any]:
        """The template the phase submits (create and updates; a delete submits none)."""
        changed = phase in (Phase.UPDATE_ONE, Phase.UPDATE_SAME_AFTER)
        if self.shape is Shape.FLAT:
            return flat(self.size, changed=0 if phase is Phase.UPDATE_ONE else None)
        if self.shape is Shape.GROUP:
            return groups([self.size], replaced=changed)
        return groups(group_sizes(self.size), replaced=changed)

    def members_stack(self) -> str | None:
        """The resource whose nested stack holds the members (the reads go there); None: the stack."""
        return None if self.shape is Shape.FLAT else group_name(0)


def resource_name(index: int) -> str:
    return f"r{index}"


def group_name(index: int) -> str:
    return f"g{index}"


def flat(size: int, *, changed: int | None = None) -> dict[str, Any]:
    """``size`` resources with ``value: v1``; resource ``changed`` (if any) has ``v2``."""
    return {"heat_template_version": VERSION,
            "description": f"bench.scale: {size} OS::Heat::None",
            "resources": {resource_name(i): {"type": "OS::Heat::None",
                                             "properties": {"value": "v2" if i == changed else "v1"}}
                          for i in range(size)}}


def group_sizes(size: int) -> list[int]:
    """``size`` members in groups of :data:`GROUP_SIZE` (the last one smaller if it must be)."""
    full, rest = divmod(size, GROUP_SIZE)
    return [GROUP_SIZE] * full + ([rest] if rest else [])


def groups(sizes: list[int], *, replaced: bool = False) -> dict[str, Any]:
    """One ``ResourceGroup`` per size; with ``replaced``, the first replaces member :data:`REPLACED`."""
    resources: dict[str, Any] = {}
    for index, members in enumerate(sizes):
        properties: dict[str, Any] = {"count": members,
                                      "resource_def": {"type": "OS::Heat::None",
                                                       "properties": {"value": "v1-%index%"}}}
        if replaced and index == 0:
            properties["removal_policies"] = [{"resource_list": [REPLACED]}]
        resources[group_name(index)] = {"type": "OS::Heat::ResourceGroup", "properties": properties}
    return {"heat_template_version": VERSION,
            "description": f"bench.scale: {sum(sizes)} OS::Heat::None in {len(sizes)} group(s)",
            "resources": resources}
