"""``OS::Heat::SoftwareDeployment`` and ``OS::Heat::StructuredDeployment``: a config run on a server.

For each action listed in ``actions`` (a SoftwareComponent's config: the actions its configs
name), the deployment stores a derived config of that action (:mod:`libs.resources.derived_config`)
and points its deployment row at it, IN_PROGRESS "Deploy data available" (NO_SIGNAL: COMPLETE at
once); the config it pointed at before goes, as in Heat. Then it waits, holding no worker, until
the row is COMPLETE, or FAILED ("Deployment to server failed: <reason>"), or the stack's timeout.
The row is the truth: a signal of the resource (:mod:`libs.resources.deployment_signal`) or a
``PUT /software_deployments/<id>`` changes it, and the next look sees it.

DELETE, when listed, runs the DELETE config and waits for it before the row and its config go,
unless the server is known to be gone (Heat asks Nova; Ember knows a server of its stack is gone
when the observer found it so). The resource's physical id is its deployment row's id; its
attributes are the outputs the agent sent back.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Final

import orjson

from libs.engine.status import Action, Status
from libs.resources import lifecycle_config, stack_user
from libs.resources.attributes import AttrSchema
from libs.resources.base import SupportStatus
from libs.resources.derived_config import (
    TRANSPORT_VALUES,
    MissingInput,
    Transport,
    config_hash,
    deploy_inputs,
    derived_inputs,
    substituted,
)
from libs.resources.properties import PropSchema
from libs.resources.software_config import (
    REMOVED_KEY,
    UNGROUPED,
    SoftwareType,
    run_stamp,
    software_of,
    stable_id,
)
from libs.resources.steps import (
    Done,
    Failed,
    Software,
    SoftwareReads,
    StepContext,
    StepResult,
    Store,
    StoredConfig,
    StoredDeployment,
    Wait,
)
from libs.template import attribute_store
from libs.template.constraints import AllowedValues
from libs.template.errors import InvalidTemplateAttribute, StackValidationFailed, UnhandledPythonError
from libs.template.functions.hot_refs import select_path
from libs.template.resolution import StackResolver, StaticResourceData

if TYPE_CHECKING:
    from libs.template.stack import StackDefinition

RUNNABLE: Final = (Action.CREATE, Action.UPDATE, Action.DELETE, Action.SUSPEND, Action.RESUME)
STANDARD_OUTPUTS: Final = ("deploy_stdout", "deploy_stderr", "deploy_status_code")
# Data: what the agent sent back, and the outputs the config declares (attributes both).
OUTPUT_VALUES_KEY: Final = "output_values"
OUTPUT_NAMES_KEY: Final = "output_names"
# Data: the deployment's stack user ({id, secret}), made with its first derived config, kept for all.
STACK_USER_KEY: Final = "stack_user"
# The deployment's reason when its resource's action is abandoned while it waits (Heat's words).
CANCELLED_REASON: Final = "Deployment cancelled."


def poll_delay(elapsed: float) -> float:
    # Soon at first (most configs are quick), then less often: thousands of deployments
    # waiting on slow configs must not keep the workers busy.
    return min(5.0, 0.5 + elapsed / 20)


class SoftwareDeployment(SoftwareType):
    """Runs a config on a server for the actions it lists, and waits for the server's answer."""

    type_name: ClassVar[str] = "OS::Heat::SoftwareDeployment"
    description: ClassVar[str] = (
        "Deploys a software config to a server: for each listed lifecycle action the server's agent "
        "gets the config with its inputs and answers with its outputs, which become attributes.")
    support_status: ClassVar[SupportStatus] = SupportStatus(version="2014.1")
    accepts_signals: ClassVar[bool] = True
    attributes_open: ClassVar[bool] = True
    answers_reads: ClassVar[bool] = True
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        "config": PropSchema("string", "The id of the config to deploy.", update_allowed=True),
        "server": PropSchema("string", "The id of the server to deploy to.", required=True),
        "input_values": PropSchema("map", "The values of the config's inputs.", update_allowed=True),
        "actions": PropSchema("list", "The lifecycle actions of this resource that run the config.",
                              default=["CREATE", "UPDATE"], update_allowed=True,
                              constraints=(AllowedValues(tuple(str(a) for a in RUNNABLE)),)),
        "name": PropSchema("string", "The derived config's name, by which a server orders its configs.",
                           update_allowed=True),
        "signal_transport": PropSchema(
            "string", "How the server answers: NO_SIGNAL completes without waiting; NATS_SIGNAL (Ember's "
            "own, not Heat's) has the agent publish its outputs on this resource's NATS JetStream "
            "subject (deploy_signal_subject), which Ember applies as a signal; every other transport "
            "posts to this resource's signal URL on Ember's API.",
            default=str(Transport.CFN_SIGNAL),
            constraints=(TRANSPORT_VALUES,)),
    }
    attributes_schema: ClassVar[Mapping[str, AttrSchema]] = {
        "deploy_stdout": AttrSchema("What the config printed on its standard output.", "string"),
        "deploy_stderr": AttrSchema("What the config printed on its standard error.", "string"),
        "deploy_status_code": AttrSchema("The config's exit status.", "string"),
    }

    # ---- validation ---------------------------------------------------------------------------
    def validate_in_stack(self, name: str, definition: StackDefinition,
                          heat_class_of: Callable[[str], str]) -> None:
        # Before anything exists a resource's reference is its name, as Heat's.
        names = StaticResourceData({n: n for n in definition.resources})
        resolver = StackResolver(definition, names)
        server = resolver.properties(name).get("server")
        if not isinstance(server, str) or server not in definition.resources:
            return
        given = resolver.properties(server).get("user_data_format")
        # A server that leaves it out has Heat's default, HEAT_CFNTOOLS.
        found = given if given is not None or heat_class_of(server) != "Server" else "HEAT_CFNTOOLS"
        if found is not None and found != "SOFTWARE_CONFIG":
            raise StackValidationFailed(
                f"Resource {server}'s property user_data_format should be set to SOFTWARE_CONFIG since "
                "there are software deployments on it.")

    # ---- what is read and stored --------------------------------------------------------------
    def software_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads:
        config = properties.get("config")
        return SoftwareReads(configs=(config,) if config else (), deployment=physical_id,
                             server=properties.get("server"))

    def update_reads(self, properties: Mapping[str, Any], physical_id: str | None) -> SoftwareReads | None:
        return self.software_reads(properties, physical_id) if physical_id else None

    def replace_for_stored(self, old_properties: Mapping[str, Any], new_properties: Mapping[str, Any],
                           software: Software) -> bool:
        """Heat's update raises UpdateReplace when an input the new config marks
        ``replace_on_change`` has another value than in the config the deployment last ran."""
        deployment = software.deployment
        last = software.configs.get(str(deployment["config_id"])) if deployment is not None else None
        named = new_properties.get("config")
        source = software.configs.get(named) if named else {}
        if last is None or source is None:
            return False  # nothing ran yet, or the update fails on its missing config
        before = {i["name"]: i.get("value") for i in last.get("inputs") or ()}
        try:
            inputs = derived_inputs(source.get("inputs") or (), new_properties.get("input_values"), ())
        except UnhandledPythonError:
            return False  # the update itself fails with the bad default
        return any(i.get("replace_on_change") and i["name"] in before and i.get("value") != before[i["name"]]
                   for i in inputs)

    def cancels(self, physical_id: str | None) -> str | None:
        return physical_id

    def source(self, ctx: StepContext) -> Mapping[str, Any] | None:
        """The config deployed ({} when none is named); None when the one named is not stored."""
        named = ctx.properties.get("config")
        if not named:
            return {}
        return software_of(ctx).configs.get(named)

    def runs(self, action: Action, properties: Mapping[str, Any], source: Mapping[str, Any]) -> bool:
        if lifecycle_config.is_lifecycle(source):  # its own actions say, as a component's do
            return lifecycle_config.for_action(source, action) is not None
        if source.get("group") == "component":
            configs = (source.get("config") or {}).get("configs") or ()
            return any(action in (c.get("actions") or ()) for c in configs)
        return action in (properties.get("actions") or ())

    def content(self, source: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]],
                properties: Mapping[str, Any]) -> Any:
        return source.get("config") or ""

    def derived(self, action: Action, ctx: StepContext, source: Mapping[str, Any], config_id: str,
                user: stack_user.StackUser | None = None) -> StoredConfig:
        props = ctx.properties
        deploy = deploy_inputs(
            server_id=props.get("server"), action=str(action), stack_path=f"{ctx.stack_name}/{ctx.stack_id}",
            resource_name=ctx.resource_name, transport=_transport(props),
            signal_url=ctx.signal_url, project=ctx.project, user=user, signal_subject=ctx.signal_subject)
        inputs = derived_inputs(source.get("inputs") or (), props.get("input_values"), deploy)
        picked = lifecycle_config.for_action(source, action)  # a lifecycle config: this action's alone
        content = picked[1] if picked is not None else self.content(source, inputs, props)
        body = {"config": content, "inputs": inputs,
                "outputs": list(source.get("outputs") or ()), "options": dict(source.get("options") or {})}
        name = str(props.get("name") or source.get("name") or self.physical_resource_name(ctx))
        group = picked[0] if picked is not None else str(source.get("group") or UNGROUPED)
        return StoredConfig(id=config_id, name=name, group=group, config=body,
                            hash=config_hash(config_id, name, group, body))

    def stored(self, action: Action, ctx: StepContext, source: Mapping[str, Any], config_id: str
               ) -> StepResult:
        """Store the derived config of ``action`` and point the deployment at it."""
        user = _stack_user(ctx)
        try:
            derived = self.derived(action, ctx, source, config_id, user)
        except UnhandledPythonError as exc:  # a default its input's type refuses
            return Failed(str(exc), error=exc.error_type)
        except MissingInput as exc:
            return Failed(str(exc), error="UserParameterMissing")
        waits = _transport(ctx.properties) is not Transport.NO_SIGNAL
        deployment = StoredDeployment(
            id=ctx.physical_id or stable_id(ctx, "deployment"), server_id=str(ctx.properties.get("server")),
            config_id=config_id, input_values=dict(ctx.properties.get("input_values") or {}),
            action=str(action), status=Status.IN_PROGRESS if waits else Status.COMPLETE,
            status_reason="Deploy data available" if waits else "Not waiting for outputs signal")
        return Store(configs=(derived,), deployment=deployment, physical_id=deployment.id,
                     data={STACK_USER_KEY: None if user is None
                           else orjson.dumps(stack_user.kept(user)).decode()},
                     stack_user=None if user is None else user.grant())

    # ---- steps --------------------------------------------------------------------------------
    def start(self, action: Action, ctx: StepContext) -> StepResult:
        # Every step decides from what is stored now: the first asks for the derived config,
        # any later one (or one run again) finds it stored and waits for its answer.
        return self.check(action, ctx) if action in RUNNABLE else super().start(action, ctx)

    def start_create(self, ctx: StepContext) -> StepResult:
        return self.check(Action.CREATE, ctx)

    def check(self, action: Action, ctx: StepContext) -> StepResult:
        if action not in RUNNABLE:
            return Done()
        if action is Action.DELETE:
            return self._delete(ctx)
        source = self.source(ctx)
        if source is None:
            named = ctx.properties.get("config")
            return Failed(f"Software config with id {named} not found", error="NotFound")
        deployment = software_of(ctx).deployment
        if not self.runs(action, ctx.properties, source):
            return Done(data=_kept(deployment, source))
        want = stable_id(ctx, "derived", run_stamp(action, ctx))
        if deployment is None or deployment.get("config_id") != want:
            return self.stored(action, ctx, source, want)
        return _settled(ctx, deployment, source)

    def _delete(self, ctx: StepContext) -> StepResult:
        stamp = run_stamp(Action.DELETE, ctx)
        if ctx.data.get(REMOVED_KEY) == stamp:
            return Done()
        software = software_of(ctx)
        deployment, source = software.deployment, self.source(ctx)
        runs = source is not None and self.runs(Action.DELETE, ctx.properties, source)
        if source is not None and runs and not software.server_gone:
            want = stable_id(ctx, "derived", run_stamp(Action.DELETE, ctx))
            if deployment is None or deployment.get("config_id") != want:
                return self.stored(Action.DELETE, ctx, source, want)
            settled = _settled(ctx, deployment, source)
            if not isinstance(settled, Done):
                return settled
        if deployment is None:
            return Done()
        return Store(removed_deployment=str(deployment["id"]),
                     removed_configs=(str(deployment["config_id"]),), data={REMOVED_KEY: stamp})

    # ---- attributes ---------------------------------------------------------------------------
    def has_attribute(self, name: str) -> bool:
        return True  # any output the config declares, known only once it is read

    def all_attributes(self, physical_id: str | None, data: Mapping[str, str],
                       properties: Mapping[str, Any]) -> dict[str, Any]:
        values = _loads(data.get(OUTPUT_VALUES_KEY), {})
        names = (*STANDARD_OUTPUTS, *_loads(data.get(OUTPUT_NAMES_KEY), []))
        return {name: values.get(name) for name in names}

    def resolve_attribute(self, name: str, physical_id: str | None, data: Mapping[str, str],
                          properties: Mapping[str, Any]) -> Any:
        return _loads(data.get(OUTPUT_VALUES_KEY), {}).get(name)

    def read(self, name: str, path: Sequence[Any], physical_id: str | None, data: Mapping[str, str],
             properties: Mapping[str, Any], *, resource_name: str) -> Any:
        values = _loads(data.get(OUTPUT_VALUES_KEY), {})
        if name in values:
            return select_path(values[name], path)
        if name in STANDARD_OUTPUTS or name in _loads(data.get(OUTPUT_NAMES_KEY), []):
            return None
        raise attribute_store.AttributeFailed(str(InvalidTemplateAttribute(resource_name, name)))


class StructuredDeployment(SoftwareDeployment):
    """A SoftwareDeployment that fills a structured config's ``get_input`` calls with its inputs."""

    type_name: ClassVar[str] = "OS::Heat::StructuredDeployment"
    description: ClassVar[str] = (
        "Deploys a structured config, each {get_input: <name>} in it replaced by that input's value, "
        "for tools that have no inputs of their own.")
    properties_schema: ClassVar[Mapping[str, PropSchema]] = {
        **SoftwareDeployment.properties_schema,
        "input_key": PropSchema("string", "The key that names an input to fill in.", default="get_input"),
        "input_values_validate": PropSchema(
            "string", "STRICT: an input that has no value fails the deployment; LAX: it is null.",
            default="LAX", constraints=(AllowedValues(("LAX", "STRICT")),)),
    }

    def content(self, source: Mapping[str, Any], inputs: Sequence[Mapping[str, Any]],
                properties: Mapping[str, Any]) -> Any:
        values = {i["name"]: i.get("value") for i in inputs}
        filled = substituted(source.get("config"), values, str(properties.get("input_key")),
                             properties.get("input_values_validate") == "STRICT")
        return filled or {}


DEPLOYMENT_TYPES: Final = (SoftwareDeployment, StructuredDeployment)


def _transport(properties: Mapping[str, Any]) -> Transport:
    return Transport(properties.get("signal_transport") or Transport.CFN_SIGNAL)


def _stack_user(ctx: StepContext) -> stack_user.StackUser | None:
    """The deployment's stack user: the one it made, else a new one; none for NO_SIGNAL, which never
    answers, for NATS_SIGNAL, which answers on NATS as its project's NATS user, or with no API to
    answer to."""
    if _transport(ctx.properties) in (Transport.NO_SIGNAL, Transport.NATS_SIGNAL) or not ctx.signal_url:
        return None
    return stack_user.of(_loads(ctx.data.get(STACK_USER_KEY), None)) or stack_user.new(ctx.rng)


def _loads(raw: str | None, empty: Any) -> Any:
    return orjson.loads(raw) if raw else empty


def with_outputs(data: Mapping[str, str], output_values: Mapping[str, Any] | None) -> dict[str, str]:
    """The resource's data once its deployment's outputs are ``output_values`` (its attributes)."""
    return {**data, OUTPUT_VALUES_KEY: orjson.dumps(dict(output_values or {})).decode()}


def _kept(deployment: Mapping[str, Any] | None, source: Mapping[str, Any]) -> dict[str, str | None]:
    """What the resource keeps of its deployment: the outputs sent back and the names declared."""
    names = [o["name"] for o in source.get("outputs") or ()]
    return {**with_outputs({}, (deployment or {}).get("output_values")),
            OUTPUT_NAMES_KEY: orjson.dumps(names).decode()}


def _settled(ctx: StepContext, deployment: Mapping[str, Any], source: Mapping[str, Any]) -> StepResult:
    """Done once the server answered, Failed if it answered with a failure, else wait."""
    status = deployment.get("status")
    if status == Status.COMPLETE:
        return Done(physical_id=str(deployment["id"]), data=_kept(deployment, source))
    if status == Status.FAILED:
        return Failed(failure_reason(deployment), error="Error")
    return Wait(poll_delay(ctx.elapsed))


# The end of a failed run's stderr that its resource's reason carries (where its error usually is).
STDERR_TAIL: Final = 500


def failure_reason(deployment: Mapping[str, Any]) -> str:
    """Heat's reason for a failed deployment, then (Ember's, as issue 17 asks: Heat leaves it to
    ``stack failures list``) the end of what the run wrote to stderr."""
    reason = f"Deployment to server failed: {deployment.get('status_reason')}"
    stderr = str(((deployment.get("output_values") or {}).get("deploy_stderr")) or "").strip()
    if not stderr:
        return reason
    tail = stderr if len(stderr) <= STDERR_TAIL else "..." + stderr[-STDERR_TAIL:]
    return f"{reason}; deploy_stderr: {tail}"
