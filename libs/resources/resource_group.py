"""``OS::Heat::ResourceGroup``: ``count`` copies of one resource definition, in a nested stack.

The nested stack's template is made here: members named ``"0"``, ``"1"``...
(``index_var``, ``%index%`` by default, replaced by each member's index in
its properties and metadata), minus the names ``removal_policies`` took out.
It has no outputs: what the group answers of its members is read from the
member rows when the group's step completes, and only what the parent's
template reads (:meth:`MemberStack.nested_reads`): ``resource.<n>`` one row,
``refs`` every member's reference in one query, a member attribute that
attribute of every member. So a member that changes rewrites no value the
size of the group unless the template reads one. An update makes the template
again from the members the nested stack asks for, so a shrink removes the
highest indices (or first the names a removal policy lists, which are then
never used again).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from libs.engine.hooks import occurrence
from libs.engine.status import Action, Status
from libs.resources import rolling
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.nested import EVERY_KEY, WHOLE, NestedStackType, member_not_found, nested_resources
from libs.resources.properties import PropSchema
from libs.resources.steps import KEEP, Done, Nest, NestedReads, StepContext, StepResult, Wait
from libs.template import attribute_store
from libs.template.attribute_store import AttributeFailed
from libs.template.constraints import AllowedValues, Length, Range
from libs.template.errors import InvalidTemplateAttribute
from libs.template.functions.hot_refs import select_path

COUNT, INDEX_VAR, RESOURCE_DEF = "count", "index_var", "resource_def"
REMOVAL_POLICIES, REMOVAL_MODE = "removal_policies", "removal_policies_mode"
REMOVED_KEY = "removed"
# The group's own attributes that are every member's reference.
REFERENCE_ATTRIBUTES = frozenset({"refs", "refs_map"})
ROLLING_KEY, NEXT_AT_KEY, BATCH_KEY = "rolling", "rolling_next_at", "batch_create"
# The named step between two batches (``create:batch``, ``update:batch``: a breakpoint there holds
# the group after each batch), and the last one passed.
BATCH_STEP, PASSED_KEY = "batch", "batch_passed"
# What the nested stack's template was last made of (:meth:`ResourceGroup.members_source`).
SOURCE_KEY = "members_source"


@dataclasses.dataclass(frozen=True)
class MadeOf:
    """What a group's whole member template is made of: the definition (a digest of
    ``resource_def`` and ``index_var``) and the names (``count`` less those ``removed``)."""

    definition: str
    count: int
    removed: tuple[str, ...]

    def encode(self) -> str:
        return orjson.dumps([self.definition, self.count, list(self.removed)]).decode()

    @classmethod
    def decode(cls, text: str | None) -> MadeOf | None:
        """None for nothing recorded, or what an earlier version recorded (a bare digest)."""
        try:
            definition, count, removed = orjson.loads(text or "null")
            return cls(str(definition), int(count), tuple(str(n) for n in removed))
        except (orjson.JSONDecodeError, TypeError, ValueError):
            return None

    def names(self) -> list[str]:
        return member_names(self.count, set(self.removed))


def _compiled(value: Any, var: str) -> Callable[[str], Any]:
    """``value`` as a function of a member's name: ``var`` replaced in its string values (not
    in keys, as Heat's). What does not hold ``var`` is copied as it is, so that no two members
    share a mutable part."""
    if isinstance(value, str):
        if var not in value:
            return lambda _name: value
        pieces = value.split(var)
        return lambda name: name.join(pieces)
    if isinstance(value, dict):
        items = [(key, _compiled(item, var)) for key, item in value.items()]
        return lambda name: {key: make(name) for key, make in items}
    if isinstance(value, list):
        makers = [_compiled(item, var) for item in value]
        return lambda name: [make(name) for make in makers]
    return lambda _name: value


def member_maker(definition: Mapping[str, Any], var: str) -> Callable[[str], dict[str, Any]]:
    """Each member's definition by its name (made once per group, called once per member)."""
    kept = {key: _compiled(definition[key], var) for key in ("properties", "metadata") if definition.get(key)}
    kind = definition["type"]
    return lambda name: {"type": kind, **{key: make(name) for key, make in kept.items()}}


def member_names(count: int, removed: set[str]) -> list[str]:
    """Heat's rule: the first ``count`` indices that removal policies have not taken out.

    A shrink keeps the lowest indices (the highest go); a name once removed by
    a policy is never used again.
    """
    names: list[str] = []
    index = 0
    while len(names) < count:
        if str(index) not in removed:
            names.append(str(index))
        index += 1
    return names


def _paused(ctx: StepContext, pause: float, data: Mapping[str, str | None]) -> Wait | None:
    """The wait between two batches (``pause_time``), or None once it is over.

    The end of the pause is recorded with the first wait, so a redelivered
    step or another worker resumes it rather than starting it again.
    """
    next_at = ctx.data.get(NEXT_AT_KEY)
    if pause and next_at is None:
        return Wait(pause, data={**data, NEXT_AT_KEY: str(ctx.now + pause)})
    if next_at is not None and ctx.now < float(next_at):
        return Wait(float(next_at) - ctx.now)
    return None


def _between_batches(ctx: StepContext, batches: int, pause: float, data: Mapping[str, str | None]
                     ) -> Wait | None:
    """What comes between the ``batches``-th batch and the next: the named step ``batch@<n>``
    (where a breakpoint pauses the group), then ``pause_time``; None once both are over."""
    step = occurrence(BATCH_STEP, batches)
    if ctx.data.get(PASSED_KEY) != step:
        return Wait(0.0, data={**data, PASSED_KEY: step}, step=step)
    return _paused(ctx, pause, data)


def _index(name: str) -> int:
    return int(name) if name.isdigit() else -1


def members_template(resources: Mapping[str, Any]) -> dict[str, Any]:
    """A nested template of named members (no outputs: the group reads its members' rows)."""
    return {"heat_template_version": "2016-10-14", "resources": dict(resources)}


def _member_attribute(kept: Mapping[str, Any], name: Any, path: Sequence[Any]) -> Any:
    """A member's attribute as the group reads it: a failure kept by the member raises; a read
    answered for the group (a member group's own attribute, see NestedReads.member_reads) first."""
    return attribute_store.read(kept, name, path)


class MemberStack(NestedStackType):
    """A nested stack of numbered members, and the attributes Heat's groups answer of them.

    A read names the group's own attribute (``refs``, ``refs_map``), ``attributes``
    with the member attribute as its path, ``resource.<n>`` (a member's reference;
    with ``.<attr>`` or a path, its attribute), or else a member attribute, read of
    every member in index order with the path applied to each member's value.
    """

    inherits_environment: ClassVar[bool] = True
    attributes_open: ClassVar[bool] = True
    answers_reads: ClassVar[bool] = True
    always_updates: ClassVar[bool] = True

    def nested_reads(self, reads: Iterable[tuple[Any, ...]], *, whole: bool = False) -> NestedReads:
        names: set[str] = set()
        attributes: set[str] = set()
        member_reads: set[tuple[str | None, tuple[Any, ...]]] = set()
        every = whole  # get_attr of the group alone gives refs and refs_map
        for name, *path in reads:
            if name.startswith("resource."):
                parts: list[Any] = [*str(name).split(".", 2)[1:], *path]
                target, rest = parts[0], parts[1:]
                names.add(str(target))
                if rest and isinstance(rest[0], str):
                    member_reads.add((str(target), tuple(rest)))
            elif name in REFERENCE_ATTRIBUTES:
                every = True
            elif name == "attributes":
                if path and isinstance(path[0], str):
                    every = True
                    attributes.add(path[0])
                    member_reads.add((None, tuple(path)))
            elif name in self.attributes_schema:
                continue  # the group's own (removed_rsrc_list): no member is read
            else:
                every = True
                attributes.add(name)
                member_reads.add((None, (name, *path)))
        return NestedReads(names=frozenset(names), every=every, attributes=frozenset(attributes), whole=whole,
                           member_reads=frozenset(member_reads))

    def members(self, data: Mapping[str, str]) -> dict[str, tuple[Any, dict[str, Any]]]:
        """The members read when the group completed, by name in index order: (reference, attributes)."""
        members = nested_resources(data)
        return {name: members[name] for name in sorted(members, key=_index)}

    def has_members(self, properties: Mapping[str, Any]) -> bool:
        """Whether the group has any member to validate (Heat validates none of an empty group)."""
        return True

    def size(self, properties: Mapping[str, Any]) -> int | None:
        """How many alike members the group makes from ``properties``; None when they are not alike
        or the size is not known before the run."""
        return None

    def one_member(self, properties: Mapping[str, Any]) -> Mapping[str, Any]:
        """``properties`` changed so that the group makes one member, as Heat's validation of a
        group builds it."""
        return properties

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        # Heat's get_attr of the group alone: its attributes that need no path; every member's
        # reference only where the template reads the group alone (a read of refs keeps its own
        # answer; a resource show shows them null otherwise, as Heat's does).
        if data.get(EVERY_KEY) != WHOLE:
            return {}
        members = self.members(data)
        return {"refs": [ref for ref, _ in members.values()],
                "refs_map": {name: ref for name, (ref, _) in members.items()}}

    def has_attribute(self, name: str) -> bool:
        return True  # any attribute of the members

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        if physical_id is None:
            return None
        members = self.members(data)
        if name.startswith("resource."):
            parts: list[Any] = [*name.split(".", 2)[1:], *path]
            target, rest = str(parts[0]), parts[1:]
            if target not in members:
                raise member_not_found(target, resource_name)
            reference, kept = members[target]
            return attribute_store.read(kept, rest[0], rest[1:]) if rest else reference
        if name == "refs":
            return select_path([ref for ref, _ in members.values()], path)
        if name == "refs_map":
            return {n: ref for n, (ref, _) in members.items()}
        if name == "attributes":
            if not path:
                raise AttributeFailed(str(InvalidTemplateAttribute(resource_name, name)))
            return {n: _member_attribute(kept, path[0], path[1:]) for n, (_, kept) in members.items()}
        return [_member_attribute(kept, name, path) for _, kept in members.values()]


class ResourceGroup(MemberStack):
    """``count`` identical resources, each with its index."""

    type_name: ClassVar[str] = "OS::Heat::ResourceGroup"
    description: ClassVar[str] = (
        "Makes a number of identical resources from one definition, in a nested stack, each "
        "with its own index.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    checks_member_types: ClassVar[bool] = True
    update_policy_schema: ClassVar[Mapping[str, PropSchema]] = {
        "rolling_update": PropSchema("map", "How an update replaces members, a batch at a time.",
                                     schema=rolling.batch_schema("members to replace", min_in_service=True)),
        "batch_create": PropSchema("map", "How a create makes members, a batch at a time.",
                                   schema=rolling.batch_schema("members to make", min_in_service=False)),
    }
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        COUNT: PropSchema("integer", "How many resources to make.", default=1,
                          constraints=(Range(min=0),), update_allowed=True),
        INDEX_VAR: PropSchema("string", "What to replace with each resource's index in its definition.",
                              default="%index%", constraints=(Length(min=3),), update_allowed=True),
        RESOURCE_DEF: PropSchema("map", "The definition of each resource.", required=True,
                                 update_allowed=True, schema={
                                     "type": PropSchema("string", "The resource type.", required=True),
                                     "properties": PropSchema("map", "The resource properties."),
                                     "metadata": PropSchema("map", "The resource metadata.")}),
        REMOVAL_POLICIES: PropSchema("list", "Resources to remove first when the group shrinks.",
                                     default=[], update_allowed=True, schema=PropSchema("map", schema={
                                         "resource_list": PropSchema("list", "Names or ids to remove.",
                                                                     default=[])})),
        REMOVAL_MODE: PropSchema("string", "Whether removal_policies add to or replace earlier ones.",
                                 default="append", constraints=(AllowedValues(("append", "update")),),
                                 update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "refs": AttrSchema("The references of the resources, in index order.", "list"),
        "refs_map": AttrSchema("The references of the resources, by name.", "map"),
        "attributes": AttrSchema("An attribute of every resource, by name (get_attr with a path).", "map"),
        "removed_rsrc_list": AttrSchema("The names of the resources removal_policies removed.", "list"),
    }

    def has_members(self, properties: Mapping[str, Any]) -> bool:
        try:
            return int(properties.get(COUNT) or 0) > 0
        except (TypeError, ValueError):
            return True  # its own validation reports the count

    def size(self, properties: Mapping[str, Any]) -> int | None:
        count = properties.get(COUNT)
        return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None

    def one_member(self, properties: Mapping[str, Any]) -> Mapping[str, Any]:
        return {**properties, COUNT: 1}

    def removed(self, ctx: StepContext) -> set[str]:
        """Names removal policies took out: these and earlier ones (append), or these only (update)."""
        props = ctx.properties
        listed = {str(n) for policy in props.get(REMOVAL_POLICIES) or []
                  for n in (policy or {}).get("resource_list") or []}
        if props.get(REMOVAL_MODE) == "update":
            return listed
        return set(orjson.loads(ctx.data.get(REMOVED_KEY) or "[]")) | listed

    def _members(self, props: Mapping[str, Any], names: list[str],
                 old: Mapping[str, Any] | None = None, keep_old: set[str] | None = None) -> dict[str, Any]:
        """The members' definitions; those in ``keep_old`` still have ``old``'s definition."""
        make_new = member_maker(props[RESOURCE_DEF], str(props.get(INDEX_VAR) or "%index%"))
        if old is None or not keep_old:
            return {name: make_new(name) for name in names}
        make_old = member_maker(old[RESOURCE_DEF], str(old.get(INDEX_VAR) or "%index%"))
        return {name: (make_old if name in keep_old else make_new)(name) for name in names}

    def new_members(self, ctx: StepContext) -> dict[str, Any]:
        """Every member the properties ask for, by name, in the order batches take them."""
        names = member_names(int(ctx.properties.get(COUNT) or 0), self.removed(ctx))
        return self._members(ctx.properties, names)

    def child_request(self, ctx: StepContext) -> Nest:
        return self._whole(ctx, self.members_source(ctx))

    def _whole(self, ctx: StepContext, source: MadeOf | None) -> Nest:
        """Every member, with what they are made of (:meth:`members_source`) to record."""
        return Nest("create", template=members_template(self.new_members(ctx)),
                    data={SOURCE_KEY: source.encode() if source is not None else None})

    def members_source(self, ctx: StepContext) -> MadeOf | None:
        """All that :meth:`new_members` makes the members of, or None where the members are
        not made of the properties and the removed names alone (a subclass's own rules).

        Recorded with each whole template the nested stack is given, so that an update
        that would make the same template again keeps the one the nested stack has, and
        one that only adds or removes members has the members it keeps left unchecked.
        """
        kind = type(self)
        if (kind.new_members is not ResourceGroup.new_members
                or kind.child_request is not ResourceGroup.child_request):
            return None
        props = ctx.properties
        definition = [props.get(RESOURCE_DEF), str(props.get(INDEX_VAR) or "%index%")]
        return MadeOf(hashlib.sha256(orjson.dumps(definition, option=orjson.OPT_SORT_KEYS)).hexdigest(),
                      int(props.get(COUNT) or 0), tuple(sorted(self.removed(ctx), key=_index)))

    def update_request(self, ctx: StepContext) -> StepResult:
        """The nested stack's update: its current template kept when the members it would be
        made of are those it was made of (Heat still updates it, and each member decides);
        a template with members added or removed, and those kept as they were, otherwise."""
        source = self.members_source(ctx)
        if source is None:
            return super().start(Action.UPDATE, ctx)
        child = ctx.child is not None and not ctx.child.deleted
        was = MadeOf.decode(ctx.data.get(SOURCE_KEY)) if child else None
        if was == source:
            return Nest("update", template=KEEP)
        request = dataclasses.replace(self._whole(ctx, source), operation="update")
        if was is None or was.definition != source.definition:
            return request
        return dataclasses.replace(request, checked=frozenset(was.names()).intersection(
            request.template["resources"]))

    # ---- batched creates (update_policy: batch_create) ---------------------------------------
    def create_policy(self, ctx: StepContext) -> Mapping[str, Any] | None:
        """The batches of a create (``max_batch_size``, ``pause_time``), or None to make every
        member at once."""
        policy = (ctx.update_policy or {}).get("batch_create")
        return policy if isinstance(policy, dict) else None

    def _created_batch(self, ctx: StepContext, done: int, batches: int, operation: str) -> Nest:
        policy = self.create_policy(ctx) or {}
        members = self.new_members(ctx)
        names = list(members)
        upto = min(len(names), done + max(int(policy.get("max_batch_size", 1) or 1), 1))
        template = members_template({n: members[n] for n in names[:upto]})
        state = {"done": upto, "target": len(names), "batches": batches + 1}
        return Nest(operation, template=template,  # type: ignore[arg-type]  # create or update
                    data={BATCH_KEY: orjson.dumps(state).decode(), NEXT_AT_KEY: None, SOURCE_KEY: None})

    def _check_batches(self, ctx: StepContext) -> StepResult:
        state = orjson.loads(ctx.data[BATCH_KEY])
        child = ctx.child
        if (child is None or child.status == Status.IN_PROGRESS
                or child.action not in (Action.CREATE, Action.UPDATE)):
            return Wait(0.5)
        if state["done"] >= state["target"] or child.status == Status.FAILED:
            result = self.child_state(ctx, child.action)
            if isinstance(result, Done):
                finished = self._finish(Action.CREATE, dataclasses.replace(
                    ctx, child=dataclasses.replace(child, action=Action.CREATE)))
                if isinstance(finished, Done):
                    return Done(physical_id=finished.physical_id, data={
                        **finished.data, BATCH_KEY: None, NEXT_AT_KEY: None, PASSED_KEY: None})
            return result
        pause = float((self.create_policy(ctx) or {}).get("pause_time", 0) or 0)
        batches = int(state.get("batches", 1))
        return (_between_batches(ctx, batches, pause, {})
                or self._created_batch(ctx, state["done"], batches, "update"))

    # ---- rolling updates (update_policy: rolling_update) -------------------------------------
    # What a group kind says about its rolling updates; an auto scaling group says it otherwise.
    def rolling_policy(self, ctx: StepContext) -> Mapping[str, Any] | None:
        policy = (ctx.update_policy or {}).get("rolling_update")
        return policy if isinstance(policy, dict) else None

    def definition_changed(self, ctx: StepContext) -> bool:
        old = ctx.old_properties or {}
        return bool(old.get(RESOURCE_DEF) != ctx.properties.get(RESOURCE_DEF))

    def target(self, ctx: StepContext) -> int:
        return int(ctx.properties.get(COUNT) or 0)

    def names_for(self, ctx: StepContext, capacity: int, state: Mapping[str, Any]) -> list[str]:
        return member_names(capacity, self.removed(ctx))

    def existing_names(self, ctx: StepContext, state: Mapping[str, Any]) -> list[str]:
        """The members the nested stack has before the first batch of a rolling update."""
        return self.names_for(ctx, state["current"], state)

    def members_for(self, ctx: StepContext, names: list[str], keep_old: set[str]) -> dict[str, Any]:
        return self._members(ctx.properties, names, ctx.old_properties, keep_old)

    def update_order(self, names: list[str], target: int) -> list[str]:
        """The order in which a rolling update gives members the new definition: Heat's
        ResourceGroup takes the highest of the first ``target`` places first, then those
        beyond the target size (which a later batch removes) as they come."""
        return [*reversed(names[:target]), *names[target:]]

    def start(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.CREATE and self.create_policy(ctx) is not None:
            return self._created_batch(ctx, 0, 0, "create")
        policy = self.rolling_policy(ctx)
        if (action is Action.UPDATE and policy is not None and ctx.old_properties is not None
                and ctx.child is not None and self.definition_changed(ctx)):
            current = ctx.child.size or 0
            state = {"current": current, "up_to_date": 0, "updated": []}
            return self._batch(ctx, policy, state)
        if action is Action.UPDATE:
            return self.update_request(ctx)
        return super().start(action, ctx)

    def _batch(self, ctx: StepContext, policy: Mapping[str, Any], state: dict[str, Any]) -> StepResult:
        target = self.target(ctx)
        capacity, count = rolling.next_batch(target, state["current"], state["up_to_date"],
                                             int(policy.get("max_batch_size", 1) or 1),
                                             int(policy.get("min_in_service", 0) or 0))
        before = set(state.get("names") or self.existing_names(ctx, state))
        names = self.names_for(ctx, capacity, state)
        updated = list(state["updated"])
        # A member the batch adds (to keep min_in_service, or to grow) starts with the new
        # definition and counts against the batch, as in Heat's member_definitions; the
        # rest of the batch updates existing members in the group kind's order.
        for name in names:
            if name not in before and name not in updated:
                updated.append(name)
                count -= 1
        for name in self.update_order(names, target):
            if count > 0 and name not in updated:
                updated.append(name)
                count -= 1
        keep_old = {n for n in names if n not in updated}
        template = members_template(self.members_for(ctx, names, keep_old))
        done = {**state, "capacity": capacity, "updated": updated, "pending": True, "names": names,
                "batch": len(updated) - len(state["updated"]), "batches": int(state.get("batches", 0)) + 1}
        return Nest("update", template=template, data={ROLLING_KEY: orjson.dumps(done).decode(),
                                                       NEXT_AT_KEY: None, SOURCE_KEY: None})

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.CREATE and ctx.data.get(BATCH_KEY):
            return self._check_batches(ctx)
        rolling_state = ctx.data.get(ROLLING_KEY)
        if action is Action.UPDATE and rolling_state and ctx.child is not None and (
                ctx.child.action == Action.UPDATE and ctx.child.status == Status.COMPLETE):
            state = orjson.loads(rolling_state)
            target = self.target(ctx)
            if state.get("pending"):  # the batch just finished: count it, once
                current, up_to_date = rolling.after_batch(target, state["current"], state["up_to_date"],
                                                          state["capacity"], state["batch"])
                state = {**state, "current": current, "up_to_date": up_to_date, "pending": False}
            if rolling.needs_update(target, state["current"], state["up_to_date"]):
                policy = self.rolling_policy(ctx) or {}
                pause = float(policy.get("pause_time", 0) or 0)
                return (_between_batches(ctx, int(state.get("batches", 1)), pause,
                                         {ROLLING_KEY: orjson.dumps(state).decode()})
                        or self._batch(ctx, policy, state))
        result = self._finish(action, ctx)
        if isinstance(result, Done) and rolling_state:
            return Done(physical_id=result.physical_id,
                        data={**result.data, ROLLING_KEY: None, NEXT_AT_KEY: None, PASSED_KEY: None})
        return result

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.child_request(ctx)

    def _finish(self, action: Action, ctx: StepContext) -> StepResult:
        result = super().check(action, ctx)
        if isinstance(result, Done) and action in (Action.CREATE, Action.UPDATE, Action.ADOPT):
            removed = sorted(self.removed(ctx), key=_index)
            return Done(physical_id=result.physical_id,
                        data={**result.data, REMOVED_KEY: orjson.dumps(removed).decode()})
        return result

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().all_attributes(physical_id, data, properties),
                "removed_rsrc_list": orjson.loads(data.get(REMOVED_KEY) or "[]")}

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        if name == "removed_rsrc_list":  # Heat gives the whole list, whatever the path
            return orjson.loads(data.get(REMOVED_KEY) or "[]")
        return super().read(name, path, physical_id, data, properties, resource_name=resource_name)
