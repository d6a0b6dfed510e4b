"""A cloud object made by one call and deleted by one call (key pairs, server groups, flavors, images).

Create: one create call ("create"); when its answer is lost (a crash), the object is
looked for ("refind") by what Ember named it and adopted if found, made again if not.
A subclass may add steps after the create (``after_create``: flavor extra specs, an
image's import) by answering a ``Call`` in a phase of its own and handling it in
``more_create``. Delete: one delete call; a 404 means it is gone already.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Mapping
from typing import Any

from libs.cloud.calls import CloudCall
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY, ResourceType
from libs.resources.cloud_steps import call, client_failure, cloud_failure, phase
from libs.resources.steps import Done, Observed, StepContext, StepResult

CREATED = "created"
FOUND = "found"
DELETED = "deleted"


class CloudObject(ResourceType, abc.ABC):
    """The steps of an object made and deleted by single calls."""

    @abc.abstractmethod
    def create_call(self, ctx: StepContext) -> CloudCall:
        """The create call, keyed :data:`CREATED`."""

    @abc.abstractmethod
    def find_call(self, ctx: StepContext) -> CloudCall:
        """A call (keyed :data:`FOUND`) whose answer shows the object if it was made."""

    @abc.abstractmethod
    def found(self, ctx: StepContext, answer: Any) -> Mapping[str, Any] | None:
        """The object this resource made, from the find call's answer, or None."""

    @abc.abstractmethod
    def delete_call(self, physical_id: str) -> CloudCall:
        """The delete call, keyed :data:`DELETED`."""

    def physical_id_of(self, made: Mapping[str, Any]) -> str:
        return str(made["id"])

    def after_create(self, ctx: StepContext, made: Mapping[str, Any], adopted: bool) -> StepResult:
        """The step after the object exists (``made`` is the cloud's answer); by default, done."""
        return Done(physical_id=self.physical_id_of(made), data={"phase": None})

    def more_create(self, ctx: StepContext, step: str) -> StepResult:
        """Later create steps of a subclass's own phases."""
        return Done(data={"phase": None})

    def start_create(self, ctx: StepContext) -> StepResult:
        return call("create", self.create_call(ctx))

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        step = phase(ctx)
        if action is Action.CREATE:
            return self._check_create(ctx, step)
        if action is Action.DELETE:
            answer = ctx.answers.get(DELETED)
            if answer is None:
                return self.start_delete(ctx)
            if answer.error is not None and not answer.not_found:
                return cloud_failure(answer.error)
            return Done(data={"phase": None})
        return self.check_other(action, ctx, step)

    def check_other(self, action: Action, ctx: StepContext, step: str) -> StepResult:
        return Done(data={"phase": None})

    def _check_create(self, ctx: StepContext, step: str) -> StepResult:
        if step == "create":
            answer = ctx.answers.get(CREATED)
            if answer is None:
                return call("refind", self.find_call(ctx))
            if answer.error is not None:
                return client_failure(self.create_call(ctx).service, answer.error)
            made = dict(answer.value or {})
            return self.after_create(ctx, made, adopted=False)
        if step == "refind":
            answer = ctx.answers.get(FOUND)
            if answer is None:
                return call("refind", self.find_call(ctx))
            if answer.error is not None and not answer.not_found:
                return cloud_failure(answer.error)
            existing = None if answer.not_found else self.found(ctx, answer.value)
            if existing is None:
                return self.start_create(ctx)
            return self.after_create(ctx, existing, adopted=True)
        return self.more_create(ctx, step)

    def start_delete(self, ctx: StepContext) -> StepResult:
        if not ctx.physical_id:
            return Done()
        return call("delete", self.delete_call(ctx.physical_id))

    # ---- observe: only whether it is still there ----------------------------------------------
    def get_call(self, physical_id: str) -> CloudCall | None:
        """One call (any key) that shows the object, 404 when it is gone; None: not observed."""
        return None

    def observe_call(self, ctx: StepContext) -> CloudCall | None:
        shown = self.get_call(ctx.physical_id) if ctx.physical_id else None
        return None if shown is None else dataclasses.replace(shown, key=OBSERVE_KEY)

    def observe(self, ctx: StepContext) -> Observed | None:
        answer = ctx.answers.get(OBSERVE_KEY)
        if answer is None or (answer.error is not None and not answer.not_found):
            return None
        return Observed(gone=answer.not_found or self.is_gone(answer.value))

    def is_gone(self, shown: Any) -> bool:
        return False
