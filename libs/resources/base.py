"""The resource plugin interface: schemas, steps, update rules, reference ids and attributes.

A plugin is a stateless :class:`ResourceType`; everything it needs comes in
as arguments, so one instance serves every resource of its type.

How the worker drives an action (``CREATE``, ``UPDATE``, ``DELETE``,
``SUSPEND``, ``RESUME``, ``CHECK``) on one resource:

1. Before CREATE and UPDATE it resolves the resource's properties and calls
   :meth:`ResourceType.validate`; the typed values it returns become
   ``StepContext.properties`` and, once the action completes, the resource's
   applied properties. A ``StackValidationFailed`` there fails the action as
   ``Failed(str(exc), exc.error_type)`` would (Heat validates inside the
   action). For UPDATE the planner has already asked
   :meth:`~ResourceType.check_immutable`, :meth:`~ResourceType.needs_update`
   (False: nothing to run) and :meth:`~ResourceType.needs_replace` (True: a
   CREATE of a replacement, then a DELETE of the old resource, instead).
   With ``converge``, it first asks :meth:`ResourceType.observe` and compares
   the template with the live values instead of the applied ones.
2. It calls :meth:`ResourceType.start` once, with ``started_at == now``.
3. On :class:`~libs.resources.steps.Wait` it persists ``physical_id``
   (unless ``KEEP``) and the ``data`` changes (None deletes a key) at once,
   then re-queues the node with ``delay``; when it comes back it calls
   :meth:`ResourceType.check` with a fresh context: same ``started_at``,
   new ``now``, the data as now persisted. Any number of ``Wait`` may follow.
   On :class:`~libs.resources.steps.Call` it does the same, but first makes the
   cloud calls (off the event loop, no lock held) and the next ``check`` finds
   their answers in ``ctx.answers``. Calls that fail with a quota, 5xx or
   unreachable error are retried by the worker with backoff before a plugin sees them.
4. On :class:`~libs.resources.steps.Done` it records ``physical_id``,
   ``data`` and ``attributes`` and sets ``<ACTION>_COMPLETE`` with
   ``reason`` as the status reason.
5. On :class:`~libs.resources.steps.Failed` it sets ``<ACTION>_FAILED`` with
   ``failed.status_reason("resources", name)`` (the template's spelling of
   the section, with a nested stack's path in front).

A redelivered message may run ``start`` or ``check`` again with the same
context; plugins answer the same way (random values are kept in ``data``).

Rules that depend on the resource's recorded state rather than on its type
stay with the planner and worker, as in Heat's ``Resource``: replace a
``*_FAILED`` resource on update (unless ``never_updates``); skip DELETE of a
resource never created; refuse SUSPEND/RESUME from the wrong state; CHECK of
a resource never created is skipped for types without ``has_check`` and is
``CHECK_FAILED`` ("Can not check <name>, resource not created yet.") for the
others.
"""

from __future__ import annotations

import abc
import dataclasses
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

from libs.cloud.calls import CloudCall
from libs.engine.status import Action
from libs.resources.attributes import SHOW, AttrSchema, attributes_api
from libs.resources.properties import PropSchema, SupportStatusName, schema_api, validate_properties
from libs.resources.steps import Done, Observed, SoftwareReads, StepContext, StepResult
from libs.template import attribute_store
from libs.template.constraints import CustomConstraints
from libs.template.errors import NotSupported
from libs.template.functions.hot_refs import select_path

if TYPE_CHECKING:
    from libs.template.stack import StackDefinition

PHYSICAL_NAME_LIMIT: Final = 255
# The answer key of :meth:`ResourceType.observe_call`.
OBSERVE_KEY: Final = "observed"


@dataclasses.dataclass(frozen=True)
class SupportStatus:
    """Since when, and how well, a resource type is supported (Heat's ``SupportStatus``)."""

    status: SupportStatusName = "SUPPORTED"
    version: str | None = None
    message: str | None = None
    previous_status: SupportStatus | None = None

    def to_api(self) -> dict[str, Any]:
        return {"status": self.status, "message": self.message, "version": self.version,
                "previous_status": None if self.previous_status is None else self.previous_status.to_api()}


def short_id(resource_uuid: str | uuid.UUID) -> str:
    """Heat's 12-character id of a resource: the 60 random "time" bits of its uuid4, base32.

    Physical names use it, so a resource keeps its name for its whole life.
    """
    value = resource_uuid if isinstance(resource_uuid, uuid.UUID) else uuid.UUID(resource_uuid)
    if value.version != 4:
        raise ValueError(f"Invalid UUID version ({value.version})")
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    return "".join(alphabet[(value.time >> shift) & 31] for shift in range(55, -5, -5))


def physical_name(stack_name: str, resource_name: str, short: str,
                  limit: int | None = PHYSICAL_NAME_LIMIT) -> str:
    """``<stack>-<resource>-<short_id>``, cut to ``limit`` as Heat cuts it.

    A backup stack's trailing ``*`` is dropped. A long name keeps its first
    two characters and its end: ``ab-<last limit-3 characters>``, so the
    unique short id survives the cut.
    """
    name = f"{stack_name.rstrip('*')}-{resource_name}-{short}"
    if not limit or len(name) <= limit:
        return name
    if limit < 4:
        raise ValueError("limit cannot be less than 4")
    return name[:2] + "-" + name[-(limit - 3):]


def renamed(renames: Mapping[str, str], values: Mapping[str, Any] | None, unchecked: Collection[str]
            ) -> tuple[dict[str, Any], frozenset[str]]:
    """The values with each deprecated name given in place of its successor moved to it."""
    given, left = dict(values or {}), set(unchecked)
    for old, new in renames.items():
        if given.get(old) is not None and given.get(new) is None:
            given[new] = given.pop(old)
            if old in left:
                left.discard(old)
                left.add(new)
    return given, frozenset(left)


class ResourceType(abc.ABC):
    """One resource type. Subclasses set the class attributes and override the steps they need."""

    type_name: ClassVar[str]
    # Ember's own words: Heat's are its class docstrings.
    description: ClassVar[str] = ""
    support_status: ClassVar[SupportStatus] = SupportStatus()
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {}
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {}
    # The resource's ``update_policy`` (Heat's ``update_policy_schema``): none, so any key is unknown.
    update_policy_schema: ClassVar[Mapping[str, PropSchema]] = {}
    # Properties that may change in place although their schema does not say so.
    update_allowed_properties: ClassVar[frozenset[str]] = frozenset()
    # A named point inside an action where a breakpoint may pause it: after ``start``
    # answered ``Wait``, before the first ``check`` (hook ``<action>:<name>``).
    named_steps: ClassVar[tuple[str, ...]] = ()
    physical_name_limit: ClassVar[int | None] = PHYSICAL_NAME_LIMIT
    # True when the type checks itself on CHECK (else CHECK completes with "not supported").
    has_check: ClassVar[bool] = False
    # Data keys holding secrets, to be stored and shown redacted.
    secret_data: ClassVar[frozenset[str]] = frozenset()
    # True: an update leaves the resource alone whatever its state, even *_FAILED
    # (Heat's OS::Heat::None skips the replace-failed rule too).
    never_updates: ClassVar[bool] = False
    # True: an update always runs, changed or not (Heat's nested stack resources: the nested
    # stack is updated and its own resources decide, so a changed nested template is seen).
    always_updates: ClassVar[bool] = False
    # True for types whose resource is a nested stack (its steps answer ``Nest``).
    nests: ClassVar[bool] = False
    # The property that names another resource of the stack whose data the steps read
    # (``ctx.peer``), as a wait condition reads its handle's signals.
    watches: ClassVar[str | None] = None
    # True for types that take signals (``POST .../signal``); see :meth:`signal`.
    accepts_signals: ClassVar[bool] = False
    # The name of Heat's class for the type, where Ember's differs (Heat prints it in messages).
    heat_class: ClassVar[str | None] = None
    # Heat's translations of deprecated names (old: new): the old one's value stands for the new
    # one's when that is not given, and is checked (or left unchecked) as it would have been.
    renamed_properties: ClassVar[Mapping[str, str]] = {}
    # True: ``get_attr`` may name any attribute before the resource exists (Heat's plugins
    # that compute their attributes themselves: groups, provider templates, OS::Heat::None).
    attributes_open: ClassVar[bool] = False
    # True: the type drops its properties unread, so nothing in them is validated.
    ignores_properties: ClassVar[bool] = False
    # True for types that answer a ``get_attr`` read as a whole, path included (groups, template
    # resources): what the template reads of them is answered when they complete (see :meth:`read`).
    answers_reads: ClassVar[bool] = False
    # True: the first step of a replacement's create is given the old resource (``ctx.replaces``)
    # and prepares it, as Heat's ``prepare_for_replace`` does (a server frees its ports).
    prepares_replace: ClassVar[bool] = False
    # Data keys a create tried again after the cloud put it in error keeps (the rest starts afresh).
    kept_on_retry: ClassVar[tuple[str, ...]] = ()
    # Data keys a completing step hands over only to answer reads (:meth:`stored_attributes`):
    # the row keeps the answers, not these (a group's members, read from their rows).
    answering_only: ClassVar[frozenset[str]] = frozenset()

    def heat_class_name(self) -> str:
        return self.heat_class or type(self).__name__

    @property
    def reaches_beyond_row(self) -> bool:
        """Whether a step needs more than its own row (a nested stack, a peer's data, its signal URL).

        The worker runs such steps one at a time rather than in a batch.
        """
        return self.nests or self.watches is not None or self.accepts_signals

    def software_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads | None:
        """The software configs (and deployment) a step reads, as ``ctx.software``; None: none.

        A step that reads them runs one at a time, as one that :attr:`reaches_beyond_row`.
        """
        return None

    # ---- validation ---------------------------------------------------------------------------
    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str,
                 resource_section: str = "resources", properties_section: str = "properties",
                 strict_values: bool = True, custom_constraints: CustomConstraints | None = None,
                 unchecked: Collection[str] = ()) -> dict[str, Any]:
        """The typed properties a step receives, or ``StackValidationFailed``.

        Values may hold :data:`~libs.resources.properties.UNKNOWN` while the
        stack is only being validated; they pass unchecked.
        """
        values, unchecked = renamed(self.renamed_properties, values, unchecked)
        typed = validate_properties(
            self.properties_schema, values, resource_name=resource_name,
            resource_section=resource_section, properties_section=properties_section,
            strict_values=strict_values, custom_constraints=custom_constraints,
            unchecked=unchecked)
        self.validate_typed(typed)
        return typed

    def validate_update_policy(self, values: Mapping[str, Any] | None, *, resource_name: str,
                               resource_section: str = "resources", section: str = "update_policy"
                               ) -> dict[str, Any]:
        """The typed, defaulted ``update_policy``, or ``StackValidationFailed`` (Heat validates it
        as properties, under its own section)."""
        return validate_properties(self.update_policy_schema, values, resource_name=resource_name,
                                   resource_section=resource_section, properties_section=section)

    def validate_typed(self, properties: Mapping[str, Any]) -> None:
        """The type's own rules over its typed properties (Heat's plugin ``validate``)."""
        return  # most types have none beyond their schema

    def validate_in_stack(self, name: str, definition: StackDefinition,
                          heat_class_of: Callable[[str], str]) -> None:
        """The type's own rules about the other resources of its stack, before anything is stored.

        ``heat_class_of`` names Heat's class of another resource (Heat's messages print it).
        Raise ``StackValidationFailed`` as :meth:`validate` does.
        """
        return  # most types look at nothing but their own properties

    # ---- steps --------------------------------------------------------------------------------
    def start(self, action: Action, ctx: StepContext) -> StepResult:
        """The first step of ``action``."""
        if action is Action.CREATE:
            return self.start_create(ctx)
        if action is Action.UPDATE:
            return self.start_update(ctx)
        if action is Action.DELETE:
            return self.start_delete(ctx)
        if action is Action.CHECK:
            return self.start_check(ctx)
        if action is Action.ADOPT:
            # The resource exists already: the adopt data gave its physical id and data.
            return Done()
        # Suspend and resume of a type with nothing to suspend complete at once.
        return Done()

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        """Every later step of ``action``, each after the ``Wait`` the previous one answered."""
        return Done()

    @abc.abstractmethod
    def start_create(self, ctx: StepContext) -> StepResult:
        """Create the resource; every type must say what its physical id is."""

    def start_update(self, ctx: StepContext) -> StepResult:
        return Done()

    def start_delete(self, ctx: StepContext) -> StepResult:
        return Done()

    def start_check(self, ctx: StepContext) -> StepResult:
        # Heat completes the CHECK and says why nothing was checked.
        return Done(reason=f"CHECK not supported for {self.type_name}")

    def observe(self, ctx: StepContext) -> Observed | None:
        """The resource as the cloud has it now, or None for a type with nothing to read back.

        Called by an update with ``converge`` before the worker decides. A cloud
        type answers from ``ctx.answers[OBSERVE_KEY]``, the answer to its
        :meth:`observe_call`; types with no cloud object answer None: what was
        applied is all there is.
        """
        return None

    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        """The one call (key :data:`OBSERVE_KEY`) whose answer :meth:`observe` reads, or None."""
        return None

    def list_call(self) -> CloudCall | None:
        """One listing of every object of this type in a project (paged by the caller), or None.

        The observer makes it once per type and project and hands each resource its
        entry through :meth:`observe_listed`: 10,000 servers are a few list calls.
        """
        return None

    def observe_listed(self, ctx: StepContext, listed: Mapping[str, Any] | None) -> Observed | None:
        """The resource as the listing shows it: ``listed`` is its entry (by physical id), None if absent."""
        return None

    def signal(self, data: Mapping[str, str], details: Any) -> tuple[dict[str, str | None], str]:
        """A signal's effect: changes to the resource's data, and the reason of its event.

        Raise a ``TemplateError`` (400) for details the type cannot take.
        """
        raise NotSupported(f"Signal resource of type {self.type_name}")

    # ---- updates ------------------------------------------------------------------------------
    def needs_update(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any],
                     definition_changed: bool = False) -> bool:
        """Whether an UPDATE runs at all: the definition (metadata, policies...) or a property changed."""
        return definition_changed or dict(old_properties) != dict(new_properties)

    def changed_properties(self, old_properties: Mapping[str, Any] | None,
                           new_properties: Mapping[str, Any]) -> set[str]:
        old = old_properties or {}
        return {key for key in new_properties if old.get(key) != new_properties.get(key)}

    def check_immutable(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any],
                        resource_name: str) -> None:
        """``NotSupported`` when an ``immutable`` property changed (checked before replacement)."""
        changed = self.changed_properties(old_properties, new_properties)
        forbidden = sorted(k for k in changed
                           if k in self.properties_schema and self.properties_schema[k].immutable)
        if forbidden:
            raise NotSupported(f"Update to properties {', '.join(forbidden)} of {resource_name} "
                               f"({self.type_name})")

    def needs_replace(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any]) -> bool:
        """Whether the property changes need a new resource rather than an in-place update.

        Heat's rule: the type's own rule first, then any changed property
        that is not ``update_allowed``.
        """
        changed = self.changed_properties(old_properties, new_properties)
        if not changed:
            return False
        if self.replace_for_changes(changed, old_properties, new_properties):
            return True
        return not changed <= self.update_allowed()

    def replace_for_changes(self, changed: set[str], old_properties: Mapping[str, Any],
                            new_properties: Mapping[str, Any]) -> bool:
        """The type's own replacement rule (Heat's ``needs_replace_with_prop_diff``)."""
        return False

    def update_allowed(self) -> frozenset[str]:
        return self.update_allowed_properties | {
            name for name, prop in self.properties_schema.items() if prop.update_allowed}

    # ---- references and attributes -----------------------------------------------------------
    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        """What ``get_resource``/``Ref`` give: the physical id, or the resource's name before it has one."""
        return physical_id if physical_id is not None else resource_name

    def has_attribute(self, name: str) -> bool:
        return name == SHOW or name in self.attributes_schema

    def attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                  properties: Mapping[str, Any]) -> Any:
        """One attribute's value (``KeyError`` for a name :meth:`has_attribute` refuses)."""
        if not self.has_attribute(name):
            raise KeyError(name)
        if name == SHOW:
            # Only a cloud object has something to show, and only once it exists.
            return None if physical_id is None else self.show(physical_id, data)
        return self.resolve_attribute(name, physical_id, data, properties)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return None

    def show(self, physical_id: str, data: Mapping[str, str]) -> Any:
        return None

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        """``get_attr: [res]``: every declared attribute but ``show``."""
        return {name: self.attribute(name, physical_id, data, properties)
                for name in self.attributes_schema if name != SHOW}

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        """``get_attr: [res, name, *path]`` as a type that :attr:`answers_reads` answers it.

        Raise :class:`~libs.template.attribute_store.AttributeFailed` with Heat's
        message where Heat's resource raises (an output that reads it shows it).
        """
        return select_path(self.attribute(name, physical_id, data, properties), path)

    def stored_attributes(self, reads: Iterable[tuple[Any, ...]], physical_id: str | None,
                          data: Mapping[str, str], properties: Mapping[str, Any], *,
                          resource_name: str) -> dict[str, Any]:
        """What the row keeps once an action completes: :meth:`all_attributes` and, for a
        type that :attr:`answers_reads`, the template's ``reads`` of it answered."""
        attributes = self.all_attributes(physical_id, data, properties)
        if not self.answers_reads:
            return attributes
        answered: dict[str, Any] = {}
        for name, *path in reads:
            try:
                value = self.read(name, path, physical_id, data, properties, resource_name=resource_name)
            except attribute_store.AttributeFailed as exc:
                value = attribute_store.failure(str(exc))
            answered[attribute_store.read_key(name, path)] = value
        return attribute_store.stored(attributes, answered)

    def kept_data(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """``data`` as the row keeps it once :meth:`stored_attributes` has answered over it."""
        return {key: value for key, value in data.items() if key not in self.answering_only}

    # ---- names and the API --------------------------------------------------------------------
    def physical_resource_name(self, ctx: StepContext) -> str:
        return physical_name(ctx.stack_name, ctx.resource_name, ctx.short_id, self.physical_name_limit)

    def schema_api(self, *, with_description: bool = False) -> dict[str, Any]:
        """The body of ``GET /resource_types/{type}``."""
        shown: dict[str, Any] = {
            "resource_type": self.type_name,
            "properties": schema_api(self.properties_schema),
            "attributes": attributes_api(self.attributes_schema),
            "support_status": self.support_status.to_api(),
        }
        if with_description:
            shown["description"] = self.description
        return shown


def described(heat_class: str, resource_name: str, physical_id: str | None, stack_name: str,
              stack_id: str) -> str:
    """A resource as Heat prints it in messages: ``Server "r" [id] Stack "s" [id]``."""
    physical = f" [{physical_id}]" if physical_id else ""
    return f'{heat_class} "{resource_name}"{physical} Stack "{stack_name}" [{stack_id}]'


def cloud_tag(stack_id: uuid.UUID | str, resource_id: int) -> str:
    """What Ember names or tags everything it makes for a resource row with: stable for the row's life."""
    return f"ember-{stack_id}-{resource_id}"
