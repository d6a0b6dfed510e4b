"""Heat's software config types: a stored, immutable config, and the base of every software type.

``OS::Heat::SoftwareConfig`` and its kin (StructuredConfig, CloudConfig, MultipartMime,
SoftwareComponent) store one config row, as Heat's software config API stores it, whose id is
the resource's physical id; any change of a property replaces the resource (a new config), and
deleting it deletes the config, which fails as Heat's does while a deployment still refers to
it. The plugin never stores anything itself: it answers :class:`~libs.resources.steps.Store`
and the worker stores, then the next step sees what is stored in ``ctx.software``.

Ids are derived from the resource row (``ctx.cloud_tag``) and the action, so a step run again
asks for the same rows and the worker stores nothing twice.
"""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Mapping
from typing import Any, ClassVar, Final

import yaml

from libs.engine.status import Action
from libs.resources.attributes import AttrSchema
from libs.resources.base import ResourceType, SupportStatus
from libs.resources.mime import Part, multipart, parts_of
from libs.resources.properties import PropSchema
from libs.resources.software_io import INPUTS, OUTPUTS, is_uuid_like, stored_body
from libs.resources.steps import (
    Done,
    Failed,
    Software,
    SoftwareReads,
    StepContext,
    StepResult,
    Store,
    StoredConfig,
)
from libs.template.constraints import AllowedValues, Length
from libs.template.errors import StackValidationFailed, UnhandledPythonError

UNGROUPED: Final = "Heat::Ungrouped"
# Data: the action (with its start) whose removal the worker has been asked to make.
REMOVED_KEY: Final = "removed"
# Data: a MultipartMime's message, which needs the configs it names, read when it was made.
CONFIG_KEY: Final = "config"
_IDS: Final = uuid.UUID("0f4b6c1e-8a4e-4c55-9d5e-5f1b2a7c9e01")
_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def stable_id(ctx: StepContext, *parts: str) -> str:
    """An id the same in every step of this resource row (and of ``parts``), new for any other."""
    row = ctx.cloud_tag or f"{ctx.stack_id}/{ctx.resource_name}/{ctx.short_id}"
    return str(uuid.uuid5(_IDS, "/".join((row, *parts))))


def run_stamp(action: Action, ctx: StepContext) -> str:
    """This run of ``action`` on the resource (a later run of the same action has another)."""
    return f"{action}@{ctx.started_at!r}"


class SoftwareType(ResourceType):
    """A type whose steps read and store software configs and deployments through the worker."""

    @property
    def reaches_beyond_row(self) -> bool:
        return True

    def software_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads:
        """What the worker reads for a step (``ctx.software``): by default the resource's own config."""
        return SoftwareReads(configs=(physical_id,) if physical_id else ())

    def update_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads | None:
        """What an update's replace-or-in-place decision reads (None: nothing beyond the properties).

        The worker adds the config the deployment read runs now, so that
        :meth:`replace_for_stored` can compare the new inputs with the last run's.
        """
        return None

    def replace_for_stored(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any],
                           software: Software) -> bool:
        """Whether what is stored makes a changed resource a replacement rather than an update."""
        return False

    def cancels(self, physical_id: str | None) -> str | None:
        """The deployment an abandoned action of this resource fails, if still IN_PROGRESS (Heat's
        ``handle_<action>_cancel``); None: the type has none."""
        return None


def software_of(ctx: StepContext) -> Software:
    """What the worker read for the step (nothing stored, where it read nothing)."""
    return ctx.software or Software()


class SoftwareConfig(SoftwareType):
    """A config to deploy to servers: a script or manifest, with the inputs and outputs it declares."""

    type_name: ClassVar[str] = "OS::Heat::SoftwareConfig"
    description: ClassVar[str] = (
        "A stored, immutable software configuration (a script, a manifest...) with the inputs it takes "
        "and the outputs it gives, for deployments to run on servers.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "group": PropSchema("string", "Which tool runs the config on the server (the agent's hook).",
                            default=UNGROUPED),
        "config": PropSchema("string", "The configuration itself: a script, a manifest..."),
        "options": PropSchema("map", "Options for the tool that runs the config."),
        "inputs": INPUTS,
        "outputs": OUTPUTS,
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "config": AttrSchema("The configuration as stored.", "string"),
    }

    # ---- what is stored -------------------------------------------------------------------------
    def group(self, properties: Mapping[str, Any]) -> str:
        return str(properties.get("group") or UNGROUPED)

    def content(self, ctx: StepContext) -> Any:
        """The config's ``config`` (raises :class:`BadDefault` as Heat's create would fail)."""
        return ctx.properties.get("config")

    def stored(self, ctx: StepContext, config_id: str) -> StoredConfig:
        props = ctx.properties
        body = stored_body(self.content(ctx), props.get("inputs"), props.get("outputs"), props.get("options"))
        return StoredConfig(id=config_id, name=self.physical_resource_name(ctx), group=self.group(props),
                            config=body)

    def kept(self, stored: Mapping[str, Any]) -> dict[str, str | None]:
        """What the resource keeps in its data of its config as stored."""
        return {}

    # ---- steps ----------------------------------------------------------------------------------
    def start_create(self, ctx: StepContext) -> StepResult:
        return self.check(Action.CREATE, ctx)

    def start_delete(self, ctx: StepContext) -> StepResult:
        return self.check(Action.DELETE, ctx)

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action is Action.CREATE:
            config_id = ctx.physical_id or stable_id(ctx, "config")
            stored = software_of(ctx).configs.get(config_id)
            if stored is not None:
                return Done(physical_id=config_id, data=self.kept(stored))
            try:
                return Store(configs=(self.stored(ctx, config_id),), physical_id=config_id)
            except UnhandledPythonError as exc:  # a default its input's type refuses
                return Failed(str(exc), error=exc.error_type)
        if action is Action.DELETE and ctx.physical_id is not None:
            stamp = run_stamp(action, ctx)
            if ctx.data.get(REMOVED_KEY) != stamp:
                return Store(removed_configs=(ctx.physical_id,), data={REMOVED_KEY: stamp})
            if ctx.physical_id in software_of(ctx).configs:
                return Failed(f"Software config with id {ctx.physical_id} can not be deleted as it is "
                              "referenced.", error="InvalidRestrictedAction")
        return Done()

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        if physical_id is None:
            return None
        return properties.get("config")


class StructuredConfig(SoftwareConfig):
    """A SoftwareConfig whose config is a map, in which a deployment replaces ``get_input`` calls."""

    type_name: ClassVar[str] = "OS::Heat::StructuredConfig"
    description: ClassVar[str] = (
        "A software config whose configuration is a map (for tools that read YAML or JSON); a "
        "structured deployment fills in its inputs.")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        **SoftwareConfig.properties_schema,
        "config": PropSchema("map", "The configuration as a map, stored and delivered as JSON."),
    }


class CloudConfig(SoftwareConfig):
    """A cloud-init ``#cloud-config`` document made from a map."""

    type_name: ClassVar[str] = "OS::Heat::CloudConfig"
    description: ClassVar[str] = (
        "A cloud-init cloud-config document, written as YAML from a map, for a server's user_data "
        "or a MultipartMime part.")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "cloud_config": PropSchema("map", "The cloud-config as a map."),
    }

    def content(self, ctx: StepContext) -> Any:
        return self.document(ctx.properties)

    def document(self, properties: Mapping[str, Any]) -> str:
        return "#cloud-config\n" + yaml.dump(properties.get("cloud_config"), Dumper=_DUMPER)

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return None if physical_id is None else self.document(properties)


class MultipartMime(SoftwareConfig):
    """A MIME multipart message of configs (inline, or stored ones named by id), for cloud-init."""

    type_name: ClassVar[str] = "OS::Heat::MultipartMime"
    description: ClassVar[str] = (
        "A MIME multipart message whose parts are configs, given inline or as the id of a stored "
        "config (a multipart config gives each of its parts), for a server's user_data.")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "group": SoftwareConfig.properties_schema["group"],
        "parts": PropSchema("list", "The parts of the message.", default=[], schema=PropSchema("map", schema={
            "config": PropSchema("string", "The part's content, or the id of a stored config.",
                                 required=True),
            "filename": PropSchema("string", "A file name for the part."),
            "type": PropSchema("string", "Whether the part is text, or a multipart message whose parts "
                               "are added.", default="text",
                               constraints=(AllowedValues(("text", "multipart")),)),
            "subtype": PropSchema("string", "The part's MIME subtype."),
        })),
    }

    def software_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads:
        named = tuple(p["config"] for p in properties.get("parts") or () if is_uuid_like(p.get("config")))
        return SoftwareReads(configs=(*((physical_id,) if physical_id else ()), *named))

    def content(self, ctx: StepContext) -> Any:
        configs = software_of(ctx).configs
        parts: list[Part] = []
        for item in ctx.properties.get("parts") or ():
            content = item["config"]
            if content in configs:  # a config named by id (one not found is taken as text, as Heat)
                stored = configs[content].get("config")
                content = stored if isinstance(stored, str) else yaml.dump(stored, Dumper=_DUMPER)
            if item.get("type") == "multipart":
                parts += [Part(p.payload, p.filename, p.subtype or _subtype_of(p.filename))
                          for p in parts_of(content)]
                continue
            filename, subtype = item.get("filename") or "", item.get("subtype") or ""
            parts.append(Part(content, filename, subtype or _subtype_of(filename)))
        return multipart(parts)

    def kept(self, stored: Mapping[str, Any]) -> dict[str, str | None]:
        return {CONFIG_KEY: str(stored.get("config"))}

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return data.get(CONFIG_KEY) if physical_id is not None else None


def _subtype_of(filename: str) -> str:
    # Heat takes a part's subtype from its file name when none is given: the name without its
    # extension ("s.sh" is text/s), which is what cloud-init then sees.
    return posixpath.splitext(filename)[0] if filename else ""


class SoftwareComponent(SoftwareConfig):
    """One config per lifecycle action of a software component, in one resource (group ``component``)."""

    type_name: ClassVar[str] = "OS::Heat::SoftwareComponent"
    description: ClassVar[str] = (
        "A software component: a config for each lifecycle action (CREATE, UPDATE, SUSPEND, RESUME, "
        "DELETE) in one resource; a deployment of it runs the config of the action it runs.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.2")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "configs": PropSchema(
            "list", "The configs, each with the actions it runs at.", required=True,
            constraints=(Length(min=1),),
            schema=PropSchema("map", schema={
                "actions": PropSchema("list", "The lifecycle actions the config runs at.",
                                      default=["CREATE", "UPDATE"], schema=PropSchema("string"),
                                      constraints=(Length(min=1),)),
                "config": PropSchema("string", "The configuration itself."),
                "tool": PropSchema("string", "The tool that runs the config on the server.",
                                   required=True),
            })),
        "inputs": INPUTS,
        "outputs": OUTPUTS,
        "options": SoftwareConfig.properties_schema["options"],
    }

    def validate(self, values: Mapping[str, Any] | None, *, resource_name: str, **more: Any
                 ) -> dict[str, Any]:
        typed = super().validate(values, resource_name=resource_name, **more)
        seen: set[str] = set()
        for config in typed.get("configs") or ():
            actions = set(config.get("actions") or ())
            if actions & seen:
                raise StackValidationFailed(
                    "Defining more than one configuration for the same action in SoftwareComponent "
                    f'"{resource_name}" is not allowed.')
            seen |= actions
        return typed

    def group(self, properties: Mapping[str, Any]) -> str:
        return "component"

    def content(self, ctx: StepContext) -> Any:
        return {"configs": list(ctx.properties.get("configs") or ())}

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        # Heat's component answers only an attribute it never declared (configs): config is null.
        return None


CONFIG_TYPES: Final = (SoftwareConfig, StructuredConfig, CloudConfig, MultipartMime, SoftwareComponent)
