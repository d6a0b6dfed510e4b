"""``OS::Heat::AutoScalingGroup`` and ``OS::Heat::ScalingPolicy``.

The group is a nested stack of ``capacity`` copies of ``resource``, named
with short random ids as Heat names them; it shrinks by removing its oldest
members. Its capacity comes from the template (``desired_capacity``, else
``min_size``) when the template changes it, and otherwise stays where
scaling left it. A policy's signal (``signal_url``, ``alarm_url``, or a NATS
request on ``ember.scale.<project>.<stack>.<group>``) changes the capacity
by :func:`new_capacity`. The group's cooldown starts when its create or update
completes and after each scaling (the policy's ``cooldown``, else the group's);
until it ends, scaling changes nothing.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, SupportStatus
from libs.resources.nested import member_not_found
from libs.resources.properties import PropSchema
from libs.resources.resource_group import ResourceGroup, members_template
from libs.resources.steps import Done, Nest, NestedReads, StepContext, StepResult
from libs.template import attribute_store
from libs.template.attribute_store import AttributeFailed
from libs.template.constraints import AllowedValues, Range
from libs.template.errors import InvalidTemplateAttribute
from libs.template.functions.hot_refs import select_path

ADJUSTMENT_TYPES = ("change_in_capacity", "exact_capacity", "percent_change_in_capacity")
CAPACITY_KEY, NAMES_KEY, COOLDOWN_END_KEY = "capacity", "member_names", "cooldown_end"
MEMBER_ALPHABET = string.ascii_lowercase + "234567"


def new_capacity(current: int, *, adjustment_type: str, adjustment: float, min_size: int, max_size: int,
                 min_adjustment_step: int | None = None) -> int:
    """Heat's capacity arithmetic: the adjustment, rounded away from zero for percentages, clamped."""
    if adjustment_type == "exact_capacity":
        wanted = int(adjustment)
    elif adjustment_type == "percent_change_in_capacity":
        delta = current * adjustment / 100.0
        step = math.ceil(abs(delta)) if abs(delta) < 1 else math.floor(abs(delta))
        if min_adjustment_step is not None and step < min_adjustment_step:
            step = min_adjustment_step
        wanted = current + (step if delta >= 0 else -step)
    else:
        wanted = current + int(adjustment)
    return max(min_size, min(max_size, wanted))


def cooldown_end(data: Mapping[str, str], now: float, cooldown: Any) -> float:
    """Until when the group refuses to scale after something changed its size now.

    As Heat's: ``cooldown`` seconds (none below zero) from now, never earlier than an
    end already set.
    """
    return max(float(data.get(COOLDOWN_END_KEY) or 0), now + max(float(cooldown or 0), 0.0))


def member_name(rng: random.Random) -> str:
    """A new member's name: 12 characters of lowercase base32, as Heat's short ids."""
    return "".join(rng.choice(MEMBER_ALPHABET) for _ in range(12))


def next_names(existing: Sequence[str], capacity: int, fresh: Any) -> list[str]:
    """Members for ``capacity``: the oldest go first on a shrink; new ones get fresh short ids."""
    names = list(existing)[max(len(existing) - capacity, 0):] if capacity < len(existing) else list(existing)
    while len(names) < capacity:
        name = fresh()
        if name not in names:
            names.append(name)
    return names


class AutoScalingGroup(ResourceGroup):
    """A group whose size policies and the template change."""

    heat_class: ClassVar[str | None] = "AutoScalingResourceGroup"
    checks_member_types: ClassVar[bool] = False  # its nested stack reports an unknown type
    # Its rolling updates are a property (rolling_updates); Heat's takes no update_policy.
    update_policy_schema: ClassVar[Mapping[str, PropSchema]] = {}

    type_name: ClassVar[str] = "OS::Heat::AutoScalingGroup"
    description: ClassVar[str] = (
        "A group of identical resources whose number scaling policies change between its minimum "
        "and maximum size.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "min_size": PropSchema("integer", "The least number of resources.", required=True,
                               constraints=(Range(min=0),), update_allowed=True),
        "max_size": PropSchema("integer", "The most number of resources.", required=True,
                               constraints=(Range(min=0),), update_allowed=True),
        "desired_capacity": PropSchema("integer", "The number of resources to have now.",
                                       update_allowed=True),
        "cooldown": PropSchema("integer", "Seconds after a scaling before the next may happen.",
                               update_allowed=True),
        "resource": PropSchema("map", "The definition of each resource.", required=True,
                               update_allowed=True),
        "rolling_updates": PropSchema("map", "How updates replace resources.", update_allowed=True,
                                      schema={"min_in_service": PropSchema("integer", "", default=0),
                                              "max_batch_size": PropSchema("integer", "", default=1),
                                              "pause_time": PropSchema("number", "", default=0)}),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "current_size": AttrSchema("The number of resources in the group.", "integer"),
        "outputs": AttrSchema("An output of each resource, by name.", "map"),
        "outputs_list": AttrSchema("An output of each resource, as a list.", "list"),
        "refs": AttrSchema("The references of the resources.", "list"),
        "refs_map": AttrSchema("The references of the resources, by name.", "map"),
    }

    def has_members(self, properties: Mapping[str, Any]) -> bool:
        return True  # validated with one member whatever its size, as Heat does

    def size(self, properties: Mapping[str, Any]) -> int | None:
        try:
            return self.capacity(properties, None, {})
        except (KeyError, TypeError, ValueError):
            return None  # sizes read from other resources: known only at run time

    def one_member(self, properties: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**properties, "min_size": 1, "max_size": 1, "desired_capacity": 1}

    def capacity(self, properties: Mapping[str, Any], old: Mapping[str, Any] | None,
                 data: Mapping[str, str]) -> int:
        desired = properties.get("desired_capacity")
        scaled = data.get(CAPACITY_KEY)
        changed = old is None or old.get("desired_capacity") != desired
        if scaled is not None and not changed:
            wanted = int(scaled)
        else:
            wanted = int(desired) if desired is not None else int(properties["min_size"])
        return max(int(properties["min_size"]), min(int(properties["max_size"]), wanted))

    def template_for(self, properties: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
        definition = dict(properties["resource"])
        member = {k: definition[k] for k in ("type", "properties", "metadata") if definition.get(k)}
        return members_template({n: dict(member) for n in names})

    def child_request(self, ctx: StepContext) -> Nest:
        existing = orjson.loads(ctx.data.get(NAMES_KEY) or "[]")
        names = next_names(existing, self.capacity(ctx.properties, ctx.old_properties, ctx.data),
                           lambda: member_name(ctx.rng))
        return Nest("create", template=self.template_for(ctx.properties, names))

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.child_request(ctx)

    # Heat's auto scaling group always replaces changed members a batch at a time.
    def rolling_policy(self, ctx: StepContext) -> Mapping[str, Any] | None:
        given = ctx.properties.get("rolling_updates") or {}
        return {"max_batch_size": given.get("max_batch_size", 1),
                "min_in_service": given.get("min_in_service", 0), "pause_time": given.get("pause_time", 0)}

    def definition_changed(self, ctx: StepContext) -> bool:
        return bool((ctx.old_properties or {}).get("resource") != ctx.properties.get("resource"))

    def target(self, ctx: StepContext) -> int:
        return self.capacity(ctx.properties, ctx.old_properties, ctx.data)

    def names_for(self, ctx: StepContext, capacity: int, state: Mapping[str, Any]) -> list[str]:
        existing = state.get("names") or orjson.loads(ctx.data.get(NAMES_KEY) or "[]")
        return next_names(existing, capacity, lambda: member_name(ctx.rng))

    def members_for(self, ctx: StepContext, names: list[str], keep_old: set[str]) -> dict[str, Any]:
        old = ctx.old_properties or ctx.properties
        new_members = self.template_for(ctx.properties, names)["resources"]
        old_members = self.template_for(old, names)["resources"]
        return {n: old_members[n] if n in keep_old else new_members[n] for n in names}

    def update_order(self, names: list[str], target: int) -> list[str]:
        return names  # oldest first, as Heat's scaling group replaces them

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        result = super().check(action, ctx)
        if isinstance(result, Done) and action in (Action.CREATE, Action.UPDATE, Action.ADOPT) and (
                ctx.child is not None):
            names = list(ctx.child.resources)
            ordered = [n for n in orjson.loads(ctx.data.get(NAMES_KEY) or "[]") if n in names]
            ordered += [n for n in names if n not in ordered]
            data = {**result.data, NAMES_KEY: orjson.dumps(ordered).decode(), CAPACITY_KEY: str(len(ordered))}
            if action is not Action.ADOPT:  # Heat's cooldown starts when a create or update completes
                data[COOLDOWN_END_KEY] = str(cooldown_end(ctx.data, ctx.now, ctx.properties.get("cooldown")))
            return Done(physical_id=result.physical_id, data=data)
        return result

    def nested_reads(self, reads: Iterable[tuple[Any, ...]], *, whole: bool = False) -> NestedReads:
        # Every member, always: the names (oldest first) are kept from them, and resource.<n>
        # is an index into those names; attributes only those the template reads.
        attributes: set[str] = set()
        for name, *path in reads:
            rest = [*name.split(".", 2)[2:], *path] if name.startswith("resource.") else (
                path if name in ("outputs", "outputs_list") else [])
            if rest and isinstance(rest[0], str):
                attributes.add(rest[0])
        return NestedReads(every=True, attributes=frozenset(attributes))

    def ordered(self, data: Mapping[str, str]) -> list[str]:
        """The members' names, oldest first: ``resource.<n>`` takes n as an index into these."""
        present = self.members(data)
        return [n for n in orjson.loads(data.get(NAMES_KEY) or "[]") if n in present]

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        # Heat's get_attr of the group alone: its attributes that need no path.
        return {name: self.read(name, (), physical_id, data, properties, resource_name="")
                for name in ("current_size", "refs", "refs_map")}

    def has_attribute(self, name: str) -> bool:
        return ResourceType.has_attribute(self, name) or name.startswith("resource.")

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        names = self.ordered(data)
        members = self.members(data)
        # Heat answers these whatever the path.
        if name == "current_size":
            return len(names)
        if name == "refs":
            return [members[n][0] for n in names]
        if name == "refs_map":
            return {n: members[n][0] for n in names}
        if name in ("outputs", "outputs_list") and path:
            values = {n: _output(members[n][1], path[0], path[1:]) for n in names}
            return values if name == "outputs" else list(values.values())
        if name.startswith("resource."):
            parts: list[Any] = [*name.split(".", 2)[1:], *path]
            index, rest = str(parts[0]), parts[1:]
            try:
                member = names[int(index)]
            except IndexError:
                raise member_not_found(index, resource_name) from None
            except ValueError as exc:  # Heat lets int() fail on a name that is not an index
                raise AttributeFailed(str(exc)) from None
            reference, kept = members[member]
            return _output(kept, rest[0], rest[1:]) if rest else reference
        raise AttributeFailed(str(InvalidTemplateAttribute(resource_name, name)))


def _output(kept: Mapping[str, Any], name: Any, path: Sequence[Any]) -> Any:
    return select_path(attribute_store.checked(kept.get(name)), path)


class ScalingPolicy(ResourceType):
    """Changes its group's size when signalled."""

    heat_class: ClassVar[str | None] = "AutoScalingPolicy"

    type_name: ClassVar[str] = "OS::Heat::ScalingPolicy"
    description: ClassVar[str] = "Changes the size of an auto scaling group when signalled."
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    accepts_signals: ClassVar[bool] = True
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "auto_scaling_group_id": PropSchema("string", "The group (get_resource of it).", required=True),
        "adjustment_type": PropSchema("string", "How scaling_adjustment is read.", required=True,
                                      constraints=(AllowedValues(ADJUSTMENT_TYPES),), update_allowed=True),
        "scaling_adjustment": PropSchema("number", "The size of the adjustment.", required=True,
                                         update_allowed=True),
        "cooldown": PropSchema("integer", "Seconds after a scaling before the next may happen.",
                               update_allowed=True),
        "min_adjustment_step": PropSchema("integer", "The least change of a percentage adjustment.",
                                          constraints=(Range(min=0),), update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "alarm_url": AttrSchema("A URL that scales the group when POSTed to.", "string"),
        "signal_url": AttrSchema("The api URL of this policy's signal.", "string"),
    }

    def start_create(self, ctx: StepContext) -> StepResult:
        return Done(physical_id=self.physical_resource_name(ctx), data={"signal_url": ctx.signal_url or ""})

    def signal(self, data: Mapping[str, str], details: Any) -> tuple[dict[str, str | None], str]:
        return {}, "Signal: scaling"

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if name in ("alarm_url", "signal_url"):
            return data.get("signal_url")
        return None
