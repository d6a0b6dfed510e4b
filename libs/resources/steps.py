"""What one step of a resource action is given, and what it answers.

A step never waits: it looks at its :class:`StepContext` and answers at once
with :class:`Done`, :class:`Wait` (call ``check`` again after ``delay``
seconds) or :class:`Failed`. Time and randomness come in through the
context, so the same context always gives the same answer, and a step the
worker runs twice (a redelivered message) does no harm.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

from libs.cloud.calls import Answers, CloudCall
from libs.engine.status import Action as Action  # noqa: PLC0414 - re-exported: what a step is given
from libs.resources.stack_user import StackUserGrant
from libs.template.errors import PathItem, format_path


class KeepType:
    """The type of :data:`KEEP`: one instance."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Final = KeepType()
"""``physical_id=KEEP``: leave the recorded physical id as it is."""

DataChanges = Mapping[str, str | None]


@dataclasses.dataclass(frozen=True)
class Replaced:
    """The other resource of a replacement, as the first step of one sees it (types with
    ``prepares_replace``): the resource a replacement is made for, in its create (Heat's
    ``prepare_for_replace`` on the old resource), or, in a rollback's update of that resource,
    its replacement that failed (Heat's ``restore_prev_rsrc``)."""

    physical_id: str | None
    properties: Mapping[str, Any]
    data: Mapping[str, str]


@dataclasses.dataclass(frozen=True)
class StepContext:
    """Everything a step may look at.

    ``properties`` are the validated properties of the action: the new ones
    for CREATE and UPDATE, the last applied ones for the other actions;
    ``old_properties`` are the last applied ones during UPDATE, else None.
    ``data`` is the resource's persisted key/value data (Heat's
    ``resource_data``) as it stands before this step. ``now`` and
    ``started_at`` are wall-clock seconds; ``started_at`` is when the first
    step of this action ran (equal to ``now`` in that step). ``short_id`` is
    12 lowercase characters, stable for the resource (see
    :func:`libs.resources.base.short_id`). ``rng`` is the only source of
    randomness a plugin may use (the worker passes ``random.SystemRandom()``).
    """

    stack_id: str
    stack_name: str
    resource_name: str
    physical_id: str | None
    properties: Mapping[str, Any]
    old_properties: Mapping[str, Any] | None
    data: Mapping[str, str]
    now: float
    started_at: float
    short_id: str
    rng: random.Random = dataclasses.field(default_factory=random.SystemRandom, repr=False,
                                           compare=False)
    # For a type that nests a stack: that stack as it is now (None before it exists).
    child: ChildStack | None = None
    # For a type that watches another resource (``watches``): that resource's data now.
    peer: Mapping[str, str] | None = None
    # Where this resource's signals are POSTed (the api's URL of it), for types that take them.
    signal_url: str | None = None
    # Where this resource's signals may be published on NATS JetStream (NATS_SIGNAL), for the same types.
    signal_subject: str | None = None
    # The resource's resolved ``update_policy`` (rolling updates, batched creates of groups).
    update_policy: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    # What the cloud answered to the calls of the step before (a ``Call``), by call key;
    # empty in any step that does not follow a ``Call``.
    answers: Answers = dataclasses.field(default_factory=dict)
    # A name Ember sets on (or tags) everything it makes for this resource, so a thing
    # made by a call whose answer was lost (a crash) is found and adopted, never made twice.
    cloud_tag: str = ""
    # In the first step of a replacement's create, for types with ``prepares_replace``: the
    # resource it replaces (Heat frees what the new one will take from it first).
    replaces: Replaced | None = None
    # In the first step of an update in a rollback, for types with ``prepares_replace``: the
    # replacement of this resource that failed, whose create took from it what it takes back.
    replaced_by: Replaced | None = None
    # Seconds a thing this step made may take to become ready (a server ACTIVE) before the type
    # fails it as in error, which Heat's action_retry_limit then makes again; None: no limit.
    ready_timeout: float | None = None
    # The project the stack belongs to, and Ember's API (what a type tells a server to poll).
    project: str = ""
    api_url: str | None = None
    # For a software config or deployment type: what is stored of it now (see :class:`Store`).
    software: Software | None = None

    @property
    def elapsed(self) -> float:
        return self.now - self.started_at


@dataclasses.dataclass(frozen=True)
class Done:
    """The action is complete.

    ``data`` values of None delete the key. ``attributes`` are values only
    known at this moment (what a cloud answered), for the worker to store;
    types that can work their attributes out later leave it empty.
    ``reason`` is the status reason of the ``<ACTION>_COMPLETE`` state (Heat
    leaves it empty except, e.g., ``CHECK not supported for <type>``).
    """

    physical_id: str | KeepType | None = KEEP
    data: DataChanges = dataclasses.field(default_factory=dict)
    attributes: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    reason: str = ""


@dataclasses.dataclass(frozen=True)
class Wait:
    """Not finished: persist ``data`` and ``physical_id`` now, call ``check`` after ``delay`` seconds.

    Recording the physical id before the action completes is what lets a
    half-created resource be found and deleted later (Heat sets its
    ``resource_id`` in ``handle_create``, before polling).
    """

    delay: float
    data: DataChanges = dataclasses.field(default_factory=dict)
    physical_id: str | KeepType | None = KEEP
    # The named step (one of the type's ``named_steps``) the action stands at now: a
    # breakpoint on hook ``<action>:<step>`` pauses it here, before the next ``check``.
    step: str | None = None


@dataclasses.dataclass(frozen=True)
class Failed:
    """The action failed with Heat's exception class name ``error`` and ``message``.

    Heat's status reason also names where it failed:
    ``status_reason("resources", "r1")`` gives
    ``ValueError: resources.r1: Test Resource failed r1``; a nested stack
    puts its parent's path in front.
    """

    message: str
    error: str = "Exception"
    # Where inside the resource it failed, after the resource's own path (a nested stack's resource).
    inner_path: tuple[PathItem, ...] = ()
    # The thing is in an error state that deleting and making it again mends (a server gone ERROR
    # during an update): within EMBER_ACTION_RETRY_LIMIT the worker does so (libs.engine.create_retry).
    remake: bool = False

    def status_reason(self, *path: PathItem) -> str:
        return _failure_text(self.error, (*path, *self.inner_path), self.message)


def _failure_text(error: str, path: Sequence[PathItem], message: str) -> str:
    rendered = format_path(path)
    return (f"{error}: " if error else "") + (f"{rendered}: " if rendered else "") + message


@dataclasses.dataclass(frozen=True)
class NestedReads:
    """Which of a nested stack's current resources a nesting type's reads need, and how much of them.

    ``names``: these resources, with their reference and every attribute they keep
    (``resource.<n>``: one row each). ``every``: every current resource's
    reference (a group's ``refs``: one query of the member rows), with
    ``attributes``, the attributes named here of each (a member attribute read of
    every member). ``whole``: the resource is read alone too (``get_attr: [res]``),
    so what it answers of every member is kept as its attributes. Nothing else of
    the nested stack is loaded.
    """

    names: frozenset[str] = frozenset()
    every: bool = False
    attributes: frozenset[str] = frozenset()
    whole: bool = False
    # The reads of a member these answer over, (member name, or None for every member read,
    # (attribute, *path)): a member that keeps no answer to one (a group whose own template
    # does not read it) is answered from its own nested stack's rows.
    member_reads: frozenset[tuple[str | None, tuple[Any, ...]]] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.names) or self.every


@dataclasses.dataclass(frozen=True)
class ChildStack:
    """What a nesting type may know of its nested stack: its status, outputs, and what is read of it."""

    id: str
    name: str
    action: str
    status: str
    status_reason: str
    outputs: tuple[Mapping[str, Any], ...] = ()
    deleted: bool = False
    project: str = ""
    # The nested resources the parent's template reads through this one (see NestedReads):
    # name -> (reference, attributes as kept, or only those asked for), given once the child has settled.
    resources: Mapping[str, tuple[Any, Mapping[str, Any]]] = dataclasses.field(default_factory=dict)
    # True: ``resources`` holds every current resource of the child (NestedReads.every).
    every: bool = False
    whole: bool = False  # NestedReads.whole
    # How many current resources the child has, once it has settled (None before).
    size: int | None = None
    # Seconds since the child's current action began.
    running_for: float = 0.0

    @property
    def outputs_by_key(self) -> dict[str, Any]:
        return {o["output_key"]: o.get("output_value") for o in self.outputs}


@dataclasses.dataclass(frozen=True)
class Nest:
    """Ask the worker to act on the nested stack, then call ``check`` after ``delay`` seconds.

    The worker does the I/O (creating, updating, deleting the child stack, or
    asking it to suspend, resume or check) and records the child's id as the
    resource's physical id; ``check`` then sees the child in ``ctx.child``.
    """

    operation: Literal["create", "update", "delete", "suspend", "resume", "check"]
    # An update's ``KEEP``: the child's current template, which the plugin knows it would make
    # again (a group of 10^5 members is neither made, checked nor stored again for nothing).
    template: Any = None
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)
    environment: Any = None
    parameters: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    timeout_mins: int | None = None
    delay: float = 0.2
    # Changes to the resource's data to record with the request (None deletes a key).
    data: DataChanges = dataclasses.field(default_factory=dict)
    # What the child's resource_facade gives: the parent resource's metadata and policies.
    facade: Mapping[str, Any] | None = None
    # For a create: Heat's abandon data of a stack, whose resources the child adopts.
    adopt_data: Mapping[str, Any] | None = None
    # For an update: resources of ``template`` the child's current template has as they are, and
    # so were checked when it was given; with the same files, environment and facade they are
    # not checked again (a group of 10^6 that gains one member checks that one).
    checked: frozenset[str] = frozenset()


@dataclasses.dataclass(frozen=True)
class Call:
    """Ask the worker to make ``calls`` on the cloud (after ``delay`` seconds), then call ``check``.

    The worker persists ``data`` and ``physical_id`` first (as :class:`Wait` does), makes
    the calls with no lock or database connection held, and runs ``check`` with each
    call's answer in ``ctx.answers[call.key]``. Answers are not persisted: a crash
    between the calls and the next step runs that step again without them, so a
    plugin that makes something records enough in ``data`` (or finds it by
    ``ctx.cloud_tag``) to adopt a half-made thing rather than make a second one.
    """

    calls: tuple[CloudCall, ...]
    delay: float = 0.0
    data: DataChanges = dataclasses.field(default_factory=dict)
    physical_id: str | KeepType | None = KEEP
    # As :attr:`Wait.step`: a named step a breakpoint may pause at, before the calls are made.
    step: str | None = None
    # The resource's stack user, stored with ``data`` (which keeps its secret) before the calls.
    stack_user: StackUserGrant | None = None


@dataclasses.dataclass(frozen=True)
class StoredConfig:
    """A software config as Heat's software_configs API stores it; immutable once stored."""

    id: str
    name: str
    group: str
    # Heat's {config, inputs, outputs, options}.
    config: Mapping[str, Any]
    # A deployment's derived config: the SHA-256 of all of its derived data, by which an agent
    # tells a config it has run from one it has not.
    hash: str | None = None


@dataclasses.dataclass(frozen=True)
class StoredDeployment:
    """A deployment of a config to a server, as Heat's software_deployments API stores it."""

    id: str
    server_id: str
    config_id: str
    input_values: Mapping[str, Any]
    action: str
    status: str
    status_reason: str


@dataclasses.dataclass(frozen=True)
class Store:
    """Ask the worker to store software configs and a deployment, then call ``check`` after ``delay``.

    In one transaction the worker stores ``configs`` (an id already stored is left as it is),
    stores ``deployment`` or points the stored one at its new config (deleting the config it
    pointed at before, as Heat does), deletes ``removed_deployment`` and then ``removed_configs``
    (a config a deployment still refers to stays), and records ``physical_id`` and ``data``.
    ``check`` then sees the result in ``ctx.software``; a step run again asks for the same ids,
    so nothing is stored twice.
    """

    configs: tuple[StoredConfig, ...] = ()
    deployment: StoredDeployment | None = None
    removed_deployment: str | None = None
    removed_configs: tuple[str, ...] = ()
    physical_id: str | KeepType | None = KEEP
    data: DataChanges = dataclasses.field(default_factory=dict)
    delay: float = 0.0
    # The resource's stack user, stored in the same transaction as ``data`` (which keeps its secret).
    stack_user: StackUserGrant | None = None


@dataclasses.dataclass(frozen=True)
class Software:
    """What the worker read for a software type's step (``ctx.software``), as the API shows it.

    ``configs``: the configs the type named (:meth:`reads`), by id, each as
    ``{id, name, group, config, inputs, outputs, options, hash}``; one not stored is absent.
    ``deployment``: the type's deployment as ``{id, server_id, config_id, input_values,
    output_values, action, status, status_reason}``, None when none is stored.
    ``server_gone``: the deployment's server is known to be gone (Heat looks it up in Nova).
    """

    configs: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    deployment: Mapping[str, Any] | None = None
    server_gone: bool = False


@dataclasses.dataclass(frozen=True)
class SoftwareReads:
    """What a software type's step needs read: configs by id, its deployment, its server."""

    configs: tuple[str, ...] = ()
    deployment: str | None = None
    server: str | None = None


StepResult = Done | Wait | Failed | Nest | Call | Store


@dataclasses.dataclass(frozen=True)
class Observed:
    """What a resource is in the cloud now (for ``update --converge`` and drift).

    ``gone``: it no longer exists; an update replaces it. Otherwise
    ``properties`` are the live values of the properties the type can read
    back; the worker lays them over the applied ones before it compares them
    with the template, as Heat does with a resource's live state.
    """

    properties: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    gone: bool = False
    # It exists but the cloud holds it in an error state (a server in ERROR): the cloud's reason.
    error: str | None = None
