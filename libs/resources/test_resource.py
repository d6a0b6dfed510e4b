"""``OS::Heat::TestResource``: Heat's fixture for exercising the engine without a cloud.

It stores a string, takes a configurable time over each action, and fails on
request. Heat sleeps and polls to take that time; here each step compares the
context's clock with the action's start and answers ``Wait(remaining)``.
Properties that only make sense with real sleeping or clients are accepted
and ignored: ``attr_wait_secs`` (a delay when the attribute is read),
``client_name``/``entity_name`` (a client polled while waiting);
``constraint_prop_secs`` is still checked by the ``test_constr`` constraint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, SupportStatus
from libs.resources.properties import PropSchema
from libs.resources.steps import KEEP, DataChanges, Done, Failed, KeepType, StepContext, StepResult, Wait
from libs.template.constraints import CustomConstraint

VALUE = "value"
UPDATE_REPLACE = "update_replace"
UPDATE_REPLACE_VALUE = "update_replace_value"
FAIL = "fail"
WAIT_SECS = "wait_secs"
ACTION_WAIT_SECS = "action_wait_secs"
ATTR_WAIT_SECS = "attr_wait_secs"
CONSTRAINT_PROP_SECS = "constraint_prop_secs"
CLIENT_NAME = "client_name"
ENTITY_NAME = "entity_name"
OUTPUT = "output"

# How often a resource told to wait forever (wait_secs < 0) is looked at again; only a
# cancel or a timeout ends that wait, and the worker handles both without asking the plugin.
FOREVER_POLL_SECS: Final = 10.0


def _per_action(action: str) -> PropSchema:
    return PropSchema("number", f"Seconds to wait after {'an' if action == 'update' else 'a'} {action}. "
                      "Defaults to the global wait_secs.", update_allowed=True)


class TestResource(ResourceType):
    """Stores ``value``; waits, fails and gets replaced as its properties ask."""

    named_steps: ClassVar[tuple[str, ...]] = ("started",)

    type_name: ClassVar[str] = "OS::Heat::TestResource"
    description: ClassVar[str] = (
        "A resource for testing stacks: it stores a string (readable as the attribute "
        "output), can take a set time over each action, and can fail or be replaced on request.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="5.0.0")
    has_check: ClassVar[bool] = True
    # Heat's declaration order, which decides which error is reported first.
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        CONSTRAINT_PROP_SECS: PropSchema(
            "number", "Number value for delay during resolve constraint.", default=0,
            update_allowed=True, constraints=(CustomConstraint("test_constr"),)),
        ATTR_WAIT_SECS: PropSchema(
            "number", "Number value for timeout during resolving output value.", default=0,
            update_allowed=True),
        VALUE: PropSchema("string", "The input string to be stored.", default="test_string",
                          update_allowed=True),
        UPDATE_REPLACE_VALUE: PropSchema(
            "string", "Some value that can be stored but can not be updated."),
        FAIL: PropSchema(
            "boolean", "Value which can be set to fail the resource operation to test failure "
            "scenarios.", default=False, update_allowed=True),
        UPDATE_REPLACE: PropSchema(
            "boolean", "Value which can be set to trigger update replace for the particular "
            "resource.", default=False, update_allowed=True),
        WAIT_SECS: PropSchema("number", "Seconds to wait after an action (-1 is infinite).",
                              default=0, update_allowed=True),
        ACTION_WAIT_SECS: PropSchema(
            "map", "Options for simulating waiting.", update_allowed=True,
            schema={action: _per_action(action) for action in ("create", "update", "delete")}),
        CLIENT_NAME: PropSchema("string", "Client to poll.", default="", update_allowed=True),
        ENTITY_NAME: PropSchema("string", "Client entity to poll.", default="", update_allowed=True),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        OUTPUT: AttrSchema("The string that was stored. This value is also available by "
                           "referencing the resource."),
    }

    # ---- steps --------------------------------------------------------------------------------
    def start_create(self, ctx: StepContext) -> StepResult:
        # A resource told to fail records neither its id nor its value.
        if ctx.properties[FAIL]:
            return self._progress(Action.CREATE, ctx, self._create_wait(ctx))
        return self._progress(Action.CREATE, ctx, self._create_wait(ctx),
                              physical_id=self.physical_resource_name(ctx),
                              data={VALUE: ctx.properties[VALUE]})

    def start_update(self, ctx: StepContext) -> StepResult:
        new_value = self._new_value(ctx)
        data: DataChanges = {}
        if new_value and not ctx.properties[FAIL]:
            data = {VALUE: new_value}
        return self._progress(Action.UPDATE, ctx, self._update_wait(ctx), data=data)

    def start_delete(self, ctx: StepContext) -> StepResult:
        return self._progress(Action.DELETE, ctx, self._wait_secs(Action.DELETE, ctx.properties))

    def start_check(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Failed("Resource not created")
        return Done()

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.CREATE:
            return self._progress(action, ctx, self._create_wait(ctx))
        if action is Action.UPDATE:
            return self._progress(action, ctx, self._update_wait(ctx))
        if action is Action.DELETE:
            return self._progress(action, ctx, self._wait_secs(action, ctx.properties))
        return Done()

    def _create_wait(self, ctx: StepContext) -> float:
        return self._wait_secs(Action.CREATE, ctx.properties)

    def _new_value(self, ctx: StepContext) -> Any:
        """The new ``value`` if it changed, else None (Heat's ``prop_diff.get('value')``)."""
        old = ctx.old_properties or {}
        new = ctx.properties[VALUE]
        return new if old.get(VALUE) != new else None

    def _update_wait(self, ctx: StepContext) -> float:
        # Only a changed, non-empty value takes time; any other update takes none.
        return self._wait_secs(Action.UPDATE, ctx.properties) if self._new_value(ctx) else 0

    @staticmethod
    def _wait_secs(action: Action, properties: Mapping[str, Any]) -> float:
        per_action = properties.get(ACTION_WAIT_SECS)
        secs = per_action.get(action.lower()) if per_action else None
        if secs is None:
            secs = properties[WAIT_SECS]
        return float(secs)

    def _progress(self, action: Action, ctx: StepContext, wait: float, *,
                  physical_id: str | KeepType | None = KEEP, data: DataChanges | None = None) -> StepResult:
        """Done once ``wait`` seconds have passed since the action started; then fail if told to."""
        changes = data or {}
        if wait < 0:
            return Wait(FOREVER_POLL_SECS, changes, physical_id)
        if ctx.elapsed < wait:
            return Wait(wait - ctx.elapsed, changes, physical_id)
        # Delete never fails, so a failing resource can still be cleaned up.
        if ctx.properties[FAIL] and action is not Action.DELETE:
            return Failed(f"Test Resource failed {ctx.resource_name}", "ValueError")
        return Done(physical_id, changes)

    # ---- updates and attributes --------------------------------------------------------------
    def replace_for_changes(self, changed: set[str], old_properties: Mapping[str, Any],
                            new_properties: Mapping[str, Any]) -> bool:
        return VALUE in changed and bool(new_properties[UPDATE_REPLACE])

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return data.get(VALUE)
