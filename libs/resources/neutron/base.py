"""What every Neutron type shares: create, adopt, wait for status, update, delete, observe.

Each action is steps over calls made by the worker (:class:`~libs.resources.steps.Call`);
``data`` carries where the action stands (``phase``) between steps, so a step whose
answers were lost (a crash between the calls and the next step: ``ctx.answers`` is
empty) knows what it had asked and asks again, or, for a create, looks for what the
lost call may have made and adopts it before it makes another (see :mod:`.adoption`).

Create: look up names (``find_<kind>``), then ``create_<entity>``, then ``set_tags`` with
``ctx.cloud_tag`` (Neutron takes no tags in a create); a type with a status waits
while it is ``BUILD`` and fails on ``ERROR``/``DEGRADED``, as Heat's ``is_built``.
Update: the changed properties in one ``update_<entity>`` (and ``set_tags`` for the
user's tags), then the same wait. Delete: ``delete_<entity>``;
404 is already gone. The last answer is kept as ``data["show"]``, Neutron's view of
the object, which attributes and ``show`` read (Heat shows the object when asked).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, Final

from libs.cloud.calls import CloudCall, Service, existing
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY, ResourceType
from libs.resources.cloud_steps import loads
from libs.resources.neutron import adoption, wire
from libs.resources.neutron.errors import not_built
from libs.resources.neutron.wire import Kind, Ref, Resolver
from libs.resources.steps import Call, Done, Failed, Observed, StepContext, StepResult
from libs.template.errors import StackValidationFailed

PHASE: Final = "phase"
IDS: Final = "ids"
SHOW: Final = "show"
CREATE_KEY: Final = "create"
ADOPT_KEY: Final = adoption.TAGGED_KEY
GET_KEY: Final = "get"
UPDATE_KEY: Final = "update"
TAGS_KEY: Final = "tags"
DELETE_KEY: Final = "delete"
LIST_KEY: Final = "listed"
# Seconds between looks at an object still building.
POLL_DELAY: Final = 1.0


class Phase(enum.StrEnum):
    LOOKUP = "lookup"    # names being turned into ids
    CREATE = "create"    # the create call was asked for
    ADOPT = "adopt"      # its answer was lost: listing by tag and by name
    TAG = "tag"          # made: being tagged (Neutron takes no tags in a create)
    WAIT = "wait"        # waiting for the status to settle
    UPDATE = "update"    # the update calls were asked for
    DELETE = "delete"    # the delete calls were asked for
    SWEEP = "sweep"      # deleting what a create with a lost answer made: listing as ADOPT does


@dataclasses.dataclass(frozen=True)
class Entity:
    """How the sdk names one Neutron object: ``create_<name>``, ``get_<name>``..., and its listing."""

    name: str
    listing: str
    has_status: bool = False
    # The sdk class of the object (``set_tags`` is given an existing one); None: it takes no tags.
    tag_class: str | None = None

    @property
    def taggable(self) -> bool:
        return self.tag_class is not None

    def call(self, key: str, verb: str, *args: Any, **kwargs: Any) -> CloudCall:
        return CloudCall(key, Service.NETWORK, f"{verb}_{self.name}", args=tuple(args), kwargs=kwargs)


def given(properties: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    """The named properties that have a value (Heat drops the None ones from its request)."""
    return {n: properties[n] for n in names if properties.get(n) is not None}


class NeutronResource(ResourceType):
    """A Neutron object; subclasses say what to ask for and how to read the answers."""

    entity: ClassVar[Entity]
    # Attribute name -> Neutron field, where they differ.
    attribute_fields: ClassVar[Mapping[str, str]] = {}
    # Properties read back from the live object for ``--converge``: property -> Neutron field.
    live_fields: ClassVar[Mapping[str, str]] = {}

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        specs = properties.get("value_specs")
        if isinstance(specs, Mapping):
            # Heat's rule: value_specs may not say what a property says, nor share or give away.
            found = ({"shared", "tenant_id"} | set(properties)) & set(specs)
            if found:
                raise StackValidationFailed(f"{', '.join(sorted(found))} not allowed in value_specs")

    # ---- what a subclass says ---------------------------------------------------------------
    def references(self, properties: Mapping[str, Any], *, updating: bool = False) -> list[tuple[str, Ref]]:
        """The values to look up by name, each with the property it comes from."""
        return []

    def create_body(self, ctx: StepContext, resolve: Resolver) -> dict[str, Any]:
        """The create call's keyword arguments (Neutron's names), Ember's tag not included."""
        raise NotImplementedError

    def update_body(self, ctx: StepContext, changed: set[str], resolve: Resolver) -> dict[str, Any] | Failed:
        """The update call's keyword arguments for the changed properties (``tags`` excluded)."""
        return {}

    def finish(self, action: Action, ctx: StepContext, obj: Mapping[str, Any]) -> StepResult:
        """The object is built: complete, or go on with the type's own steps."""
        return Done(physical_id=str(obj["id"]), data=self.settled(obj))

    def more(self, phase: str, action: Action, ctx: StepContext) -> StepResult | None:
        """A later step of a phase of the type's own (None: not one of its phases)."""
        return None

    # ---- helpers ------------------------------------------------------------------------------
    def settled(self, obj: Mapping[str, Any]) -> dict[str, str | None]:
        return {PHASE: None, IDS: None, SHOW: wire.dumps(wire.neutron_view(obj))}

    def name_of(self, ctx: StepContext) -> str:
        name = ctx.properties.get("name")
        return name if name else self.physical_resource_name(ctx)

    def tags_of(self, ctx: StepContext) -> list[str]:
        return [*(ctx.properties.get("tags") or []), ctx.cloud_tag]

    @staticmethod
    def value_specs(properties: Mapping[str, Any]) -> dict[str, Any]:
        return dict(properties.get("value_specs") or {})

    def changes(self, ctx: StepContext, changed: set[str], plain: Iterable[str],
                resolve: Resolver) -> dict[str, Any]:
        """The update fields every type shares: ``plain`` properties as they are, the name (the
        physical name again when removed), the QoS policy's id, and the value_specs that changed."""
        props, old = ctx.properties, ctx.old_properties or {}
        body: dict[str, Any] = {k: props[k] for k in changed if k in set(plain)}
        if "name" in changed:
            body["name"] = self.name_of(ctx)
        if "qos_policy" in changed:
            policy = props["qos_policy"]
            body["qos_policy_id"] = resolve(Kind.QOS_POLICY, policy) if policy else None
        if "value_specs" in changed:
            before = old.get("value_specs") or {}
            body.update({k: v for k, v in (props["value_specs"] or {}).items() if before.get(k) != v})
        return body

    def _refs(self, properties: Mapping[str, Any], only: set[str] | None = None) -> tuple[CloudCall, ...]:
        refs = self.references(properties, updating=only is not None)
        return wire.lookups(ref for prop, ref in refs if only is None or prop in only)

    @staticmethod
    def _ids(ctx: StepContext) -> Resolver:
        return Resolver(loads(ctx.data, IDS, {}))

    # ---- create -------------------------------------------------------------------------------
    def start_create(self, ctx: StepContext) -> StepResult:
        finds = self._refs(ctx.properties)
        if finds:
            return Call(finds, data={PHASE: Phase.LOOKUP, IDS: None})
        return self._create(ctx, {})

    def _create(self, ctx: StepContext, ids: Mapping[str, str]) -> StepResult:
        ctx = dataclasses.replace(ctx, data={**ctx.data, IDS: wire.dumps(ids)})
        body = self.create_body(ctx, Resolver(ids))
        if self._described(ctx):
            body["description"] = ctx.cloud_tag
        return Call((self.entity.call(CREATE_KEY, "create", **body),),
                    data={PHASE: Phase.CREATE, IDS: wire.dumps(ids)})

    def _described(self, ctx: StepContext) -> bool:
        """Whether Ember's tag goes in the object's description too: when nothing else does."""
        return (self.entity.taggable and ctx.properties.get("description") is None
                and "description" not in self.value_specs(ctx.properties))

    def made_filter(self, ctx: StepContext) -> dict[str, Any] | None:
        """How an untagged object this resource made is listed: by Ember's tag in its description,
        else by the name Ember gave it."""
        if not self.entity.taggable:
            return None
        if self._described(ctx):
            return {"description": ctx.cloud_tag}
        return {"name": self.name_of(ctx)}

    def adopt_calls(self, ctx: StepContext) -> tuple[CloudCall, ...]:
        """The listings that find what a create whose answer was lost made."""
        return adoption.listings(self.entity.listing, ctx.cloud_tag, self.made_filter(ctx))

    def adopt_pick(self, ctx: StepContext, listed: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
        return listed[0] if listed else None

    def _found(self, ctx: StepContext) -> adoption.Found | Failed | None:
        return adoption.found(self.adopt_calls(ctx), ctx.answers, ctx.started_at, ctx.cloud_tag,
                              lambda listed: self.adopt_pick(ctx, listed))

    def _tag(self, ctx: StepContext, view: Mapping[str, Any]) -> StepResult:
        """Tag a new (or adopted untagged) object: what finds it after a crash."""
        physical_id = str(view["id"])
        cls = self.entity.tag_class or ""
        call = CloudCall(TAGS_KEY, Service.NETWORK, "set_tags",
                         args=(existing(cls, physical_id), self.tags_of(ctx)))
        return Call((call,), physical_id=physical_id, data={PHASE: Phase.TAG, SHOW: wire.dumps(view)})

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        phase = ctx.data.get(PHASE)
        if phase == Phase.LOOKUP:
            return self._after_lookup(action, ctx)
        if phase == Phase.CREATE:
            return self._after_create(action, ctx)
        if phase == Phase.ADOPT:
            return self._after_adopt(action, ctx)
        if phase == Phase.TAG:
            return self._after_tag(action, ctx)
        if phase == Phase.WAIT:
            return self._after_wait(action, ctx)
        if phase == Phase.UPDATE:
            return self._after_update(action, ctx)
        if phase in (Phase.DELETE, Phase.SWEEP):
            return self._after_delete(ctx)
        found = self.more(phase or "", action, ctx)
        return found if found is not None else Done()

    def _after_lookup(self, action: Action, ctx: StepContext) -> StepResult:
        only = (None if action is Action.CREATE
                else self.changed_properties(ctx.old_properties, ctx.properties))
        finds = self._refs(ctx.properties, only)
        ids = wire.found_ids(finds, ctx.answers)
        if ids is None:
            return Call(finds, data={PHASE: Phase.LOOKUP})
        if isinstance(ids, Failed):
            return ids
        if action is Action.CREATE:
            return self._create(ctx, ids)
        return self._update(ctx, ids)

    def _after_create(self, action: Action, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(CREATE_KEY)
        if answer is None:
            return Call(self.adopt_calls(ctx), data={PHASE: Phase.ADOPT})
        if answer.error is not None:
            return wire.failed(answer.error)
        view = wire.neutron_view(answer.value)
        return self._tag(ctx, view) if self.entity.taggable else self._settle(action, ctx, view)

    def _after_adopt(self, action: Action, ctx: StepContext) -> StepResult:
        found = self._found(ctx)
        if found is None:
            return Call(self.adopt_calls(ctx), data={PHASE: Phase.ADOPT})
        if isinstance(found, Failed):
            return found
        if found.obj is None:
            return self._create(ctx, loads(ctx.data, IDS, {}))
        if found.untagged:
            return self._tag(ctx, wire.neutron_view(found.obj))
        return self._settle(action, ctx, found.obj)

    def _after_tag(self, action: Action, ctx: StepContext) -> StepResult:
        view = loads(ctx.data, SHOW, {})
        answer = ctx.answers.get(TAGS_KEY)
        if answer is None:
            return self._tag(ctx, view)
        if answer.error is not None:
            return wire.failed(answer.error)
        return self._settle(action, ctx, {**view, "tags": self.tags_of(ctx)})

    def _settle(self, action: Action, ctx: StepContext, obj: Mapping[str, Any]) -> StepResult:
        view = wire.neutron_view(obj)
        physical_id = str(view["id"])
        if not self.entity.has_status or view.get("status") in ("ACTIVE", "DOWN"):
            return self.finish(action, ctx, view)
        if ctx.physical_id != physical_id:
            # Record the id before anything can fail, so a delete finds what was made.
            return Call((self.entity.call(GET_KEY, "get", physical_id),), physical_id=physical_id,
                        data={PHASE: Phase.WAIT})
        problem = not_built(view.get("status"))
        if problem is not None:
            return problem
        return Call((self.entity.call(GET_KEY, "get", physical_id),), delay=POLL_DELAY,
                    data={PHASE: Phase.WAIT})

    def _after_wait(self, action: Action, ctx: StepContext) -> StepResult:
        answer = ctx.answers.get(GET_KEY)
        if answer is None or ctx.physical_id is None:
            return Call((self.entity.call(GET_KEY, "get", ctx.physical_id),), data={PHASE: Phase.WAIT})
        if answer.error is not None:
            return wire.failed(answer.error)
        return self._settle(action, ctx, answer.value)

    # ---- update -------------------------------------------------------------------------------
    def start_update(self, ctx: StepContext) -> StepResult:
        finds = self._refs(ctx.properties, self.changed_properties(ctx.old_properties, ctx.properties))
        if finds:
            return Call(finds, data={PHASE: Phase.LOOKUP, IDS: None})
        return self._update(ctx, {})

    def update_calls(self, ctx: StepContext, ids: Mapping[str, str]) -> tuple[CloudCall, ...] | Failed:
        changed = self.changed_properties(ctx.old_properties, ctx.properties)
        body = self.update_body(ctx, changed - {"tags"}, Resolver(ids))
        if isinstance(body, Failed):
            return body
        calls: list[CloudCall] = []
        if body:
            calls.append(self.entity.call(UPDATE_KEY, "update", ctx.physical_id, **body))
        if "tags" in changed and self.entity.tag_class is not None and ctx.physical_id is not None:
            calls.append(CloudCall(TAGS_KEY, Service.NETWORK, "set_tags",
                                   args=(existing(self.entity.tag_class, ctx.physical_id),
                                         self.tags_of(ctx))))
        return tuple(calls)

    def _update(self, ctx: StepContext, ids: Mapping[str, str]) -> StepResult:
        calls = self.update_calls(ctx, ids)
        if isinstance(calls, Failed):
            return calls
        if not calls:
            return self.finish(Action.UPDATE, ctx, loads(ctx.data, SHOW, {"id": ctx.physical_id}))
        return Call(calls, data={PHASE: Phase.UPDATE, IDS: wire.dumps(ids)})

    def _after_update(self, action: Action, ctx: StepContext) -> StepResult:
        calls = self.update_calls(ctx, loads(ctx.data, IDS, {}))
        if isinstance(calls, Failed):
            return calls
        if any(c.key not in ctx.answers for c in calls):
            return Call(calls, data={PHASE: Phase.UPDATE})  # answers lost: updates are idempotent
        for call in calls:
            error = ctx.answers[call.key].error
            if error is not None:
                return wire.failed(error)
        updated = ctx.answers.get(UPDATE_KEY)
        if updated is None or not updated.value:
            return Call((self.entity.call(GET_KEY, "get", ctx.physical_id),), data={PHASE: Phase.WAIT})
        return self._settle(action, ctx, updated.value)

    # ---- delete -------------------------------------------------------------------------------
    def delete_calls(self, ctx: StepContext, physical_id: str) -> tuple[CloudCall, ...]:
        return (self.entity.call(DELETE_KEY, "delete", physical_id, ignore_missing=False),)

    def start_delete(self, ctx: StepContext) -> StepResult:
        if ctx.physical_id is not None:
            return Call(self.delete_calls(ctx, ctx.physical_id), data={PHASE: Phase.DELETE})
        if ctx.data.get(PHASE) in (Phase.CREATE, Phase.ADOPT):
            # A create whose answer was lost may have made the object: find it as a create would.
            return Call(self.adopt_calls(ctx), data={PHASE: Phase.SWEEP})
        return Done(data={PHASE: None})

    def _after_delete(self, ctx: StepContext) -> StepResult:
        if ctx.data.get(PHASE) == Phase.SWEEP:
            found = self._found(ctx)
            if found is None:
                return Call(self.adopt_calls(ctx), data={PHASE: Phase.SWEEP})
            if isinstance(found, Failed):
                return found
            if found.obj is None:
                return Done(data={PHASE: None})
            physical_id = str(wire.neutron_view(found.obj)["id"])
            return Call(self.delete_calls(ctx, physical_id), physical_id=physical_id,
                        data={PHASE: Phase.DELETE})
        if not ctx.answers:
            return self.start_delete(ctx)
        for answer in ctx.answers.values():
            if answer.error is not None and not answer.not_found:
                return wire.failed(answer.error)
        return Done(data={PHASE: None})

    # ---- observe ------------------------------------------------------------------------------
    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        if ctx.physical_id is None:
            return None
        return self.entity.call(OBSERVE_KEY, "get", ctx.physical_id)

    def observe(self, ctx: StepContext) -> Observed | None:
        answer = ctx.answers.get(OBSERVE_KEY)
        if answer is None or (answer.error is not None and not answer.not_found):
            return None
        if answer.not_found:
            return Observed(gone=True)
        return Observed(properties=self.live_properties(ctx, wire.neutron_view(answer.value)))

    def list_call(self) -> CloudCall | None:
        return CloudCall(LIST_KEY, Service.NETWORK, self.entity.listing)

    def observe_listed(self, ctx: StepContext, listed: Mapping[str, Any] | None) -> Observed | None:
        if listed is None:
            return Observed(gone=True)
        return Observed(properties=self.live_properties(ctx, wire.neutron_view(listed)))

    def live_properties(self, ctx: StepContext, view: Mapping[str, Any]) -> dict[str, Any]:
        """The properties the object shows now (Heat's ``parse_live_resource_data``)."""
        # A property given by name reads back as an id: not a change, so it is left out.
        by_name = {prop for prop, ref in self.references(ctx.properties) if not wire.is_uuid(ref.value)}
        # What the template leaves to Neutron (a subnet's pools, its gateway) is not a change either:
        # converging it back to "unset" would clear what Neutron chose.
        live = {prop: view[field] for prop, field in self.live_fields.items()
                if field in view and prop not in by_name and ctx.properties.get(prop) is not None}
        if "tags" in view and ctx.properties.get("tags") is not None:
            live["tags"] = wire.without(view["tags"], ctx.cloud_tag)
        return live

    # ---- references and attributes -----------------------------------------------------------
    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        return physical_id  # Heat's Neutron types give their id, None before there is one

    def show(self, physical_id: str, data: Mapping[str, str]) -> Any:
        return loads(data, SHOW)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if physical_id is None:
            return None
        shown = loads(data, SHOW, {})
        return shown.get(self.attribute_fields.get(name, name))
