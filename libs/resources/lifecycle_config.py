"""``Ember::LifecycleConfig``: one config per lifecycle action, in one resource (issue 17, seed 002).

Heat's design discussion asked for ``create_config``/``update_config``/``suspend_config``/
``resume_config``/``delete_config`` in one resource while ``OS::Heat::SoftwareConfig`` stays a
store of config that knows nothing of actions. This type is that resource: it stores one config
row whose group is :data:`GROUP` and whose body keeps each action's text and the tool (``group``)
that runs them. A deployment of it picks the config of the action it runs (:func:`for_action`):
its derived config for that action is that text alone, in the tool's group, so any agent hook
runs it as a plain config; an action the config has no text for runs nothing (the deployment
completes at once), whatever the deployment's ``actions`` say.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Final

from libs.engine.status import Action
from libs.resources.base import SupportStatus
from libs.resources.properties import PropSchema
from libs.resources.software_config import SoftwareConfig
from libs.resources.steps import StepContext
from libs.template.errors import StackValidationFailed

GROUP: Final = "Ember::Lifecycle"
# Each action's property, in the order of a resource's life.
PROPERTIES: Final = {Action.CREATE: "create_config", Action.UPDATE: "update_config",
                     Action.SUSPEND: "suspend_config", Action.RESUME: "resume_config",
                     Action.DELETE: "delete_config"}


def for_action(source: Mapping[str, Any], action: str) -> tuple[str, str] | None:
    """For a stored lifecycle config: (tool, text) of ``action``, None when it has none; for any
    other config: None."""
    if source.get("group") != GROUP:
        return None
    body = source.get("config") or {}
    text = (body.get("actions") or {}).get(str(action))
    return (str(body.get("group") or "script"), str(text)) if text is not None else None


def is_lifecycle(source: Mapping[str, Any]) -> bool:
    return source.get("group") == GROUP


class LifecycleConfig(SoftwareConfig):
    """A config for each lifecycle action of one piece of software."""

    type_name: ClassVar[str] = "Ember::LifecycleConfig"
    description: ClassVar[str] = (
        "One config per lifecycle action (create_config, update_config, suspend_config, resume_config, "
        "delete_config) in one resource; a deployment of it runs, at each action, that action's config "
        "with the tool `group` names, and nothing at an action it has none for.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="ember-1")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "group": PropSchema("string", "Which tool runs each action's config on the server (its hook).",
                            default="script"),
        **{name: PropSchema("string", f"The config run at {action}.") for action, name in PROPERTIES.items()},
        "options": SoftwareConfig.properties_schema["options"],
        "inputs": SoftwareConfig.properties_schema["inputs"],
        "outputs": SoftwareConfig.properties_schema["outputs"],
    }

    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str, **more: Any
                 ) -> dict[str, Any]:
        typed = super().validate(values, resource_name=resource_name, **more)
        if all(typed.get(name) is None for name in PROPERTIES.values()):
            raise StackValidationFailed(
                f'Property error: resources.{resource_name}.properties: Give at least one of '
                f'{", ".join(PROPERTIES.values())}.')
        return typed

    def group(self, properties: Mapping[str, Any]) -> str:
        return GROUP

    def content(self, ctx: StepContext) -> Any:
        props = ctx.properties
        return {"group": str(props.get("group") or "script"),
                "actions": {str(action): props[name] for action, name in PROPERTIES.items()
                            if props.get(name) is not None}}
