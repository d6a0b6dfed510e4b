"""Types that nest a stack: ``OS::Heat::Stack`` here; provider templates share the steps.

Each action of the resource is the same action of its nested stack: the
first step asks the worker to act on the child (:class:`Nest`), and every
later step looks at the child (``ctx.child``) until that action has ended. The
child is a real stack (its own events, listed with ``show_nested``) driven by
the same planner and workers; its id is the resource's physical id and its
outputs are the resource's attributes. An output the child could not resolve
is kept as Heat's ``TemplateOutputError`` ("Error in <res> output <key>: ...").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

import orjson

from libs.engine.status import Action, Status
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, SupportStatus
from libs.resources.properties import PropSchema, Unresolvable
from libs.resources.steps import ChildStack, Done, Failed, Nest, NestedReads, StepContext, StepResult, Wait
from libs.template import attribute_store
from libs.template.errors import InvalidTemplateAttribute, StackValidationFailed
from libs.template.functions.hot_refs import select_path
from libs.template.registry import ResolvedType

POLL_SECONDS = 0.5
# A child running longer is looked at less often: every tenth of the time it has run, up to this.
# Each look is a redelivered work item, which JetStream hands out before any new one: 1,000
# nested stacks looked at every 0.5 s kept two workers busy with nothing else, and the members
# of those stacks never started.
POLL_MAX_SECONDS = 10.0


def poll_delay(child: ChildStack | None) -> float:
    """How long to wait before looking at a nested stack still under way again."""
    running = child.running_for if child is not None else 0.0
    return min(POLL_MAX_SECONDS, max(POLL_SECONDS, running / 10))
OUTPUTS_KEY = "outputs"
# The outputs the child could not resolve: key -> Heat's message for a read of it.
OUTPUT_ERRORS_KEY = "output_errors"
# The nested stack's ARN (Heat's stack identifier), and the nested resources read through this one.
ARN_KEY, NESTED_KEY = "stack_arn", "nested_resources"
# Set when NESTED_KEY holds every current resource of the nested stack (a group's every member).
EVERY_KEY = "nested_every"
WHOLE = "whole"  # EVERY_KEY's value when the resource is read alone too
STACK_ID_OUTPUT = "OS::stack_id"
# Where an adopted resource keeps its nested stack's abandon data until the nested stack is made.
ADOPT_NESTED_KEY = "adopt_nested"


def nested_failure(reason: str, action: str) -> Failed:
    """The failure of a resource whose nested stack's ``action`` failed with ``reason``.

    Heat reads the error, the path and the message back out of the nested
    stack's ``Resource <ACTION> failed: <error>: <path>: <message>`` (split at
    every colon, so colons in the message come back as ``": "``) and puts the
    resource's own path in front of the nested path; any other reason is the
    message as it stands.
    """
    if f"Resource {action.upper()} failed: " not in reason:
        return Failed(reason, error="")
    parts = [part.strip() for part in reason.split(":")]
    if len(parts) < 4:
        return Failed(reason, error="")
    return Failed(": ".join(parts[3:]), error=parts[1], inner_path=tuple(parts[2].split(".")))


class NestedStackType(ResourceType):
    """The steps every stack-nesting type shares; subclasses say what the child is made of."""

    nests: ClassVar[bool] = True
    # True: the nested stack gets the parent's files and child environment (Heat's
    # get_child_environment), as provider templates and groups do.
    inherits_environment: ClassVar[bool] = False
    # True for a group that resolves its members' types itself when it is validated.
    checks_member_types: ClassVar[bool] = False
    answering_only: ClassVar[frozenset[str]] = frozenset({NESTED_KEY, EVERY_KEY})

    def child_request(self, ctx: StepContext) -> Nest:
        """The template, files, environment and parameters of the child, for create and update."""
        raise NotImplementedError

    def start(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.CREATE:
            return self.child_request(ctx)
        if action is Action.UPDATE:
            request = self.child_request(ctx)
            return Nest("update", request.template, request.files, request.environment,
                        request.parameters, request.timeout_mins)
        if action is Action.ADOPT:
            # Heat's handle_adopt: the nested stack is made again and adopts what the
            # abandoned one held (or, with no such data, is simply made).
            request = self.child_request(ctx)
            held = ctx.data.get(ADOPT_NESTED_KEY)
            return dataclasses.replace(request, adopt_data=orjson.loads(held) if held else None,
                                       data={**request.data, ADOPT_NESTED_KEY: None})
        if ctx.physical_id is None:
            return Done()
        operation = {Action.DELETE: "delete", Action.SUSPEND: "suspend", Action.RESUME: "resume",
                     Action.CHECK: "check"}[action]
        return Nest(operation)  # type: ignore[arg-type]  # the four names above

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.ADOPT:
            # A nested stack made with adopt data adopts; one made without it creates.
            made = ctx.child.action if ctx.child is not None else Action.ADOPT
            return self.child_state(ctx, made if made in (Action.ADOPT, Action.CREATE) else Action.ADOPT)
        return self.child_state(ctx, str(action), deleting=action is Action.DELETE)

    def child_state(self, ctx: StepContext, child_action: str, *, deleting: bool = False) -> StepResult:
        """Done once the child's ``child_action`` completed, Failed if it failed, else wait."""
        child = ctx.child
        if child is None or child.deleted:
            if deleting:
                return Done()
            return Wait(POLL_SECONDS)
        if child.action != child_action or child.status == Status.IN_PROGRESS:
            return Wait(poll_delay(child))
        if child.status == Status.FAILED:
            return nested_failure(child.status_reason, child_action)
        return Done(physical_id=child.id, data=settled_data(ctx.resource_name, child))

    def outputs(self, data: Mapping[str, str]) -> dict[str, Any]:
        raw = data.get(OUTPUTS_KEY)
        return dict(orjson.loads(raw)) if raw else {}

    def output_errors(self, data: Mapping[str, str]) -> dict[str, str]:
        raw = data.get(OUTPUT_ERRORS_KEY)
        return dict(orjson.loads(raw)) if raw else {}

    def nested_reads(self, reads: Iterable[tuple[Any, ...]], *, whole: bool = False) -> NestedReads:
        """The nested resources whose reference and attributes ``reads`` (of this resource) need;
        ``whole``: the template also reads the resource alone (``get_attr: [res]``)."""
        return NestedReads()


def member_not_found(member: str, resource_name: str) -> attribute_store.AttributeFailed:
    """Heat's failure for ``resource.<member>`` naming nothing in a group or nested stack."""
    message = f"Member '{member}' not found in group resource '{resource_name}'."
    return attribute_store.AttributeFailed(message)


def settled_data(resource_name: str, child: ChildStack) -> dict[str, str | None]:
    """What the resource keeps of its settled child: outputs (and their errors), name, ARN, what is read."""
    outputs = {o["output_key"]: o.get("output_value") for o in child.outputs}
    errors = {o["output_key"]: f"Error in {resource_name} output {o['output_key']}: {o['output_error']}"
              for o in child.outputs if o.get("output_error") is not None}
    # Heat URL-quotes each part; stack names and ids never need it.
    arn = f"arn:openstack:heat::{child.project}:stacks/{child.name}/{child.id}"
    return {OUTPUTS_KEY: orjson.dumps(outputs).decode(), "stack_name": child.name,
            OUTPUT_ERRORS_KEY: orjson.dumps(errors).decode() if errors else None,
            ARN_KEY: arn if child.project else None, **read_data(child.resources, every=child.every,
                                                                      whole=child.whole)}


def read_data(read: Mapping[str, tuple[Any, Mapping[str, Any]]], *, every: bool, whole: bool = False
              ) -> dict[str, str | None]:
    """What the step hands over of the nested resources read (see :class:`NestedReads`)."""
    nested = {name: [ref, dict(kept)] for name, (ref, kept) in read.items()}
    return {NESTED_KEY: orjson.dumps(nested).decode() if nested else None,
            EVERY_KEY: (WHOLE if whole else "1") if every else None}


def unanswered(read: Mapping[str, tuple[Any, Mapping[str, Any]]], reads: NestedReads
               ) -> dict[str, list[tuple[Any, ...]]]:
    """name -> the member reads of ``reads`` that the row ``read`` of that name keeps no answer to."""
    gaps: dict[str, list[tuple[Any, ...]]] = {}
    for name, (_, kept) in read.items():
        missing = sorted({wanted for member, wanted in reads.member_reads if member in (None, name)
                          if not attribute_store.answers(kept, wanted[0], wanted[1:])}, key=repr)
        if missing:
            gaps[name] = missing
    return gaps


def nested_resources(data: Mapping[str, str]) -> dict[str, tuple[Any, dict[str, Any]]]:
    """What :func:`settled_data` kept of the nested resources: name -> (reference, attributes)."""
    return {name: (ref, kept) for name, (ref, kept) in orjson.loads(data.get(NESTED_KEY) or "{}").items()}


class StackResource(NestedStackType):
    """``OS::Heat::Stack``: a stack made from a template given as a property."""

    heat_class: ClassVar[str | None] = "RemoteStack"

    type_name: ClassVar[str] = "OS::Heat::Stack"
    description: ClassVar[str] = (
        "A stack of its own, made from the template given in the properties, nested in this one.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "context": PropSchema("map", "Where to make the stack; Ember makes it beside this one.",
                              schema={"region_name": PropSchema("string", "Region name."),
                                      "credential_secret_id": PropSchema("string", "Not used by Ember."),
                                      "ca_cert": PropSchema("string", "Not used by Ember."),
                                      "insecure": PropSchema("boolean", "Not used by Ember.",
                                                             default=False)}),
        "template": PropSchema("string", "The template of the nested stack.", required=True,
                               update_allowed=True),
        "timeout": PropSchema("integer", "Minutes to wait for the nested stack.", update_allowed=True),
        "parameters": PropSchema("map", "The nested stack's parameters.", default={},
                                 update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "stack_name": AttrSchema("The name of the nested stack.", "string"),
        "outputs": AttrSchema("The outputs of the nested stack, by key.", "map"),
    }

    def child_request(self, ctx: StepContext) -> Nest:
        props = ctx.properties
        return Nest("create", template=props["template"], parameters=dict(props.get("parameters") or {}),
                    timeout_mins=props.get("timeout"))

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.child_request(ctx)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if name == "outputs":
            return self.outputs(data)
        if name == "stack_name":
            return data.get("stack_name")
        return None


class TemplateResource(NestedStackType):
    """A provider template: a resource whose type is a template file (or maps to one).

    Its properties are the nested stack's parameters and its attributes the
    nested stack's outputs. One instance stands for one template; the worker
    fills in the template's text, the files and the child environment, which
    only the parent's desired state has.
    """

    type_name: ClassVar[str] = "<provider template>"
    description: ClassVar[str] = "A resource made from a template."
    inherits_environment: ClassVar[bool] = True
    attributes_open: ClassVar[bool] = True
    answers_reads: ClassVar[bool] = True
    always_updates: ClassVar[bool] = True

    def __init__(self, template_key: str, type_name: str, resolved: ResolvedType | None = None) -> None:
        self.template_key = template_key
        self.resource_type_name = type_name
        # The registry entry that made the type a template: the nested stack's environment goes
        # without it, so inside the template the same name means what it meant before (a builtin).
        self.resolved = resolved

    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str,
                 resource_section: str = "resources", properties_section: str = "properties",
                 **_: Any) -> dict[str, Any]:
        # The nested stack checks its parameters when it is made, with Heat's messages;
        # a value whose functions failed fails here, as any property's does.
        given = dict(values or {})
        for key, value in given.items():
            if isinstance(value, Unresolvable):
                raise StackValidationFailed(
                    value.message, (resource_section, resource_name, properties_section, key, *value.path),
                    error="Property error")
        return given

    def needs_replace(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any]) -> bool:
        return False  # the nested stack is updated in place

    def child_request(self, ctx: StepContext) -> Nest:
        return Nest("create", template=self.template_key, parameters=dict(ctx.properties))

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.child_request(ctx)

    def has_attribute(self, name: str) -> bool:
        return True  # any output of the nested template

    def nested_reads(self, reads: Iterable[tuple[Any, ...]], *, whole: bool = False) -> NestedReads:
        return NestedReads(names=frozenset(
            name.split(".", 2)[1] for name, *_ in reads if name.startswith("resource.")))

    def reference_id(self, physical_id: str | None, data: Mapping[str, str], *, resource_name: str) -> Any:
        """Heat's: the nested template's ``OS::stack_id`` output if it has one, else the stack's ARN."""
        if physical_id is None:
            return resource_name
        outputs = self.outputs(data)
        if STACK_ID_OUTPUT in outputs and STACK_ID_OUTPUT not in self.output_errors(data):
            return outputs[STACK_ID_OUTPUT]
        return data.get(ARN_KEY) or physical_id

    def kept_outputs(self, data: Mapping[str, str]) -> dict[str, Any]:
        """The nested outputs, a failed one as the failure a read of it raises."""
        errors = self.output_errors(data)
        return {key: attribute_store.failure(errors[key]) if key in errors else value
                for key, value in self.outputs(data).items()}

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        return self.kept_outputs(data)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return self.kept_outputs(data).get(name)

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        if physical_id is None:
            return None
        if name.startswith("resource."):
            # resource.<r>, resource.<r>.<attr> and resource.<r> with a path: a nested resource.
            parts: list[Any] = [*name.split(".", 2)[1:], *path]
            target, rest = str(parts[0]), parts[1:]
            nested = nested_resources(data)
            if target not in nested:
                raise member_not_found(target, resource_name)
            reference, kept = nested[target]
            return attribute_store.read(kept, rest[0], rest[1:]) if rest else reference
        outputs = self.kept_outputs(data)
        if name in outputs:
            return select_path(attribute_store.checked(outputs[name]), path)
        if name == STACK_ID_OUTPUT:
            return select_path(self.reference_id(physical_id, data, resource_name=resource_name), path)
        raise attribute_store.AttributeFailed(str(InvalidTemplateAttribute(resource_name, name)))
