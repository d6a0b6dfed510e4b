"""Stack operations as the API asks for them: validate, record the desired state, ask for a plan.

Each one answers as soon as the desired state is stored and the plan request
is on the queue (Heat's 201/202); the planner and workers do the rest. The
api service and the tests call these; nothing here waits for the cloud.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any

import asyncpg

from libs import plan_requests, request_digest
from libs.cloud.lookups import CloudAnswers
from libs.cloud.validation import CloudLookup, with_lookups_told
from libs.db import Conn, events, stacks, templates
from libs.db.pool import Connections
from libs.engine import desired, status
from libs.engine.status import Action, Status
from libs.evaluation_pool import INLINE, Evaluator
from libs.messaging.bus import Bus
from libs.messaging.payloads import PlanRequest
from libs.resources import nesting, tree_size
from libs.resources.registry import Registry
from libs.resources.validation import plugin_checks
from libs.template import errors, request
from libs.template.environment import Environment
from libs.template.limits import Limits
from libs.template.parameters import check_immutable
from libs.template.template import Template


class StackExists(errors.TemplateError):
    error_type = "StackExists"

    def __init__(self, name: str) -> None:
        super().__init__(f"The Stack ({name}) already exists.")


@dataclasses.dataclass(frozen=True)
class Options:
    disable_rollback: bool = True  # Heat's engine default
    timeout_mins: int | None = None
    tags: Sequence[str] = ()


def check_nested(loaded: request.LoadedStack, registry: Registry, *, project: str, stack_name: str,
                 limits: Limits = request.DEFAULT_LIMITS) -> None:
    """Heat's validation of the nested stacks of a top stack before it is stored (a nested stack's
    own were checked with its top stack's), then the resources of the whole tree against the limit."""
    how = nesting.Expansion(registry, project)
    nesting.check(loaded, how, stack_name=stack_name)
    tree_size.check_total(loaded, how, limits, stack_name=stack_name)


async def _send(pool: Connections, bus: Bus, plan: PlanRequest, after_commit: list[PlanRequest] | None
                ) -> None:
    """Publish the staged plan request now, or leave it to a caller whose own transaction the
    operation ran in (``after_commit``): it must not be published before that commits."""
    if after_commit is None:
        await plan_requests.send(pool, bus, plan)
    else:
        after_commit.append(plan)


async def create_stack(pool: Connections, bus: Bus, *, project: str, name: str,
                       stack_request: request.StackRequest, options: Options = Options(),
                       limits: Limits = request.DEFAULT_LIMITS,
                       builtin_types: Collection[str] | None = None,
                       registry: Registry | None = None,
                       parent: stacks.StackRow | None = None,
                       adopt_data: Mapping[str, Any] | None = None,
                       facade: Mapping[str, Any] | None = None,
                       after_commit: list[PlanRequest] | None = None,
                       evaluation: Evaluator = INLINE, cloud: CloudLookup | None = None,
                       json_request: bool = False) -> stacks.StackRow:
    """A new stack (``parent``: the stack it is nested in, one level deeper).

    With ``adopt_data`` (Heat's abandon data) the stack adopts the resources
    it lists instead of creating them: the ``ADOPT`` action. The request is
    checked in ``evaluation``'s processes, under its deadline, with the
    cloud-checked constraints asked of ``cloud`` (None: they are not checked).
    ``json_request``: the request holds only values parsed from JSON (an API
    body's maps), so its desired state is stored with its digest, which a
    no-change update compares (:mod:`libs.request_digest`).
    """
    stack_id = uuid.uuid4()
    how = Checking(project=project, stack_name=name, stack_id=str(stack_id), limits=limits,
                   builtin_types=builtin_types, registry=registry, facade=facade, top=parent is None)
    loaded, cloudless = await with_lookups_told(cloud, project, lambda answers: evaluation.run(
        _checked_create_lean, stack_request, dataclasses.replace(how, cloud=answers)))
    digest = (request_digest.digest(stack_request, _inputs(how, cloud))
              if json_request and cloudless else None)
    async with pool.acquire() as conn, conn.transaction():
        if await stacks.by_name(conn, project, name) is not None:
            raise StackExists(name)
        template_id = await templates.insert(conn, loaded.stored_template(stack_request), loaded.files,
                                             loaded.environment, facade, checked_digest=digest)
        try:
            row = await stacks.insert(conn, stack_id=stack_id, name=name, project=project,
                                      template_id=template_id, disable_rollback=options.disable_rollback,
                                      timeout_mins=options.timeout_mins, tags=list(options.tags),
                                      parent_id=parent.id if parent else None,
                                      nested_depth=parent.nested_depth + 1 if parent else 0)
        except asyncpg.UniqueViolationError:
            raise StackExists(name) from None
        if adopt_data is not None:
            await stacks.mark_adopting(conn, stack_id, dict(adopt_data))
            row = dataclasses.replace(row, action=Action.ADOPT)
        adopting = adopt_data is not None
        plan = await plan_requests.stage(conn, bus.names, row, Action.ADOPT if adopting else Action.CREATE,
                                         reason="adopt" if adopting else "create")
    await _send(pool, bus, plan, after_commit)
    return row


def patched(stored: templates.RawTemplate, given: request.StackRequest,
            clear_parameters: Sequence[str] = ()) -> request.StackRequest:
    """Heat's PATCH (``existing``): what is given, merged over what the stack has.

    No template means the stored one; files merge into the stored files; the
    environment is loaded over the stored one; parameters merge over the stored
    ones, minus ``clear_parameters``, and those the template lacks are dropped.
    """
    template = Template.load(given.template if given.template is not None else stored.template,
                             {**stored.files, **given.files})
    env = Environment.from_dict(stored.environment).with_layer(
        request.environment_for(given, template).to_dict()).to_dict()
    known = template.parameter_names()
    env["parameters"] = {k: v for k, v in env["parameters"].items()
                         if k in known and k not in clear_parameters}
    return request.StackRequest(template=template.raw, files=template.files, environment=env)


@dataclasses.dataclass(frozen=True)
class Checked:
    """What is stored of a request that passed Heat's validation."""

    template: dict[str, Any]
    files: dict[str, str]
    environment: dict[str, Any]
    # Left out by the pool process (``template`` is then empty): equal to the request's, which
    # the caller has; a template of 10^5 resources costs a second to send back.
    template_as_given: bool = False

    def stored_template(self, given: request.StackRequest) -> Mapping[str, Any]:
        return given.template if self.template_as_given else self.template


@dataclasses.dataclass(frozen=True)
class Checking:
    """How a create or update request is checked (every field pickles: it crosses to the pool)."""

    project: str
    stack_name: str
    stack_id: str
    limits: Limits = request.DEFAULT_LIMITS
    builtin_types: Collection[str] | None = None
    registry: Registry | None = None
    facade: Mapping[str, Any] | None = None
    # Nested stacks are checked with the top stack only.
    top: bool = True
    # Custom constraints checked against the cloud (nova.flavor...): the answers the edge made.
    cloud: CloudAnswers = dataclasses.field(default_factory=CloudAnswers)


def _load(stack_request: request.StackRequest, how: Checking, **options: Any) -> request.LoadedStack:
    """``request.load`` with the cloud-checked constraints (see :class:`CloudAnswers`)."""
    with how.cloud.checking() as custom:
        return request.load(
            stack_request, stack_name=how.stack_name, stack_id=how.stack_id, project_id=how.project,
            limits=how.limits, builtin_types=how.builtin_types, facade=how.facade,
            checks=(plugin_checks(how.registry, custom_constraints=custom)
                    if how.registry is not None else None),
            custom_constraints=custom, **options)


def checked_create(stack_request: request.StackRequest, how: Checking) -> Checked:
    """Heat's validation of a new stack's request (pure: it runs in the evaluation pool)."""
    loaded = _load(stack_request, how)
    if how.registry is not None and how.top:
        check_nested(loaded, how.registry, project=how.project, stack_name=how.stack_name,
                     limits=how.limits)
    return _stored(loaded)


def checked_update(stack_request: request.StackRequest, stored: templates.RawTemplate | None, how: Checking,
                   *, existing: bool = False, clear_parameters: Sequence[str] = ()) -> Checked:
    """Heat's validation of an update over the ``stored`` desired state (pure, as above)."""
    if existing:
        assert stored is not None
        stack_request = patched(stored, stack_request, clear_parameters)
    loaded = _load(stack_request, how, updating=True)
    if stored is not None and any(loaded.parameters.template_names()):
        # Heat's ``ImmutableParameterModified``: an update may not change an ``immutable`` parameter
        # (a template that declares none, as a group's members', changes none: the old one, which
        # may hold 10^5 members, is not loaded for nothing).
        old = desired.load(stored.template, stored.files, stored.environment, stack_name=how.stack_name,
                           stack_id=how.stack_id, project_id=how.project, facade=stored.facade)
        check_immutable(old.parameters, loaded.parameters, loaded.environment.parameters)
    if how.registry is not None and how.top:
        check_nested(loaded, how.registry, project=how.project, stack_name=how.stack_name,
                     limits=how.limits)
    return _stored(loaded)


def _stored(loaded: request.LoadedStack) -> Checked:
    return Checked(dict(loaded.template.raw), dict(loaded.template.files), loaded.environment.to_dict())


def _lean(checked: Checked, given: request.StackRequest) -> Checked:
    if isinstance(given.template, Mapping) and checked.template == given.template:
        return dataclasses.replace(checked, template={}, template_as_given=True)
    return checked


def _checked_create_lean(stack_request: request.StackRequest, how: Checking) -> Checked:
    """:func:`checked_create`, for the pool: its template left out when it is the request's."""
    return _lean(checked_create(stack_request, how), stack_request)


def _checked_update_lean(stack_request: request.StackRequest, stored: templates.RawTemplate | None,
                         how: Checking, *, existing: bool, clear_parameters: Sequence[str]) -> Checked:
    """:func:`checked_update`, for the pool: its template left out when it is the request's."""
    return _lean(checked_update(stack_request, stored, how, existing=existing,
                                clear_parameters=clear_parameters), stack_request)


def _inputs(how: Checking, cloud: CloudLookup | None) -> request_digest.CheckInputs:
    return request_digest.CheckInputs(
        project=how.project, stack_name=how.stack_name, stack_id=how.stack_id, limits=how.limits,
        builtin_types=how.builtin_types, plugin_checks=how.registry is not None, facade=how.facade,
        top=how.top, cloud=cloud is not None)


async def stored_of(pool: Connections, stack: stacks.StackRow, *, whole: bool = True
                    ) -> templates.RawTemplate | None:
    """The stack's current desired state, which an update is checked against; without its
    resources and outputs unless ``whole`` (a PATCH, which keeps what it does not name)."""
    if stack.template_id is None:
        return None
    async with pool.acquire() as conn:
        if whole:
            return await templates.get(conn, stack.template_id)
        return await templates.parameters_of(conn, stack.template_id)


async def _stored_digest(pool: Connections, stack: stacks.StackRow) -> str | None:
    if stack.template_id is None:
        return None
    async with pool.acquire() as conn:
        return await templates.checked_digest(conn, stack.template_id)


async def update_stack(pool: Connections, bus: Bus, stack: stacks.StackRow, *,
                       stack_request: request.StackRequest, options: Options | None = None,
                       existing: bool = False, clear_parameters: Sequence[str] = (),
                       converge: bool = False, limits: Limits = request.DEFAULT_LIMITS,
                       builtin_types: Collection[str] | None = None,
                       registry: Registry | None = None, facade: Mapping[str, Any] | None = None,
                       cancel_running: bool = False, after_commit: list[PlanRequest] | None = None,
                       evaluation: Evaluator = INLINE, cloud: CloudLookup | None = None,
                       json_request: bool = False, checked: AbstractSet[str] = frozenset()) -> None:
    """A new desired state; allowed while another traversal runs (no stack lock).

    ``converge`` (Heat's flag): every resource is observed and compared with
    the template as it is in the cloud, so drift is repaired even when the
    template did not change. ``cancel_running``: a create or update still
    running is cancelled first, as Heat's preemption of a nested stack's
    update does (a newer traversal supersedes it either way; this says so).
    ``json_request``: as :func:`create_stack`'s; a whole (not ``existing``)
    request with the digest of the stack's desired state is that desired state
    again: kept as it is, neither checked nor stored again (so an update finding every
    resource converged with it settles a stack of 10^5 without writing a row).
    ``checked``: resources of a whole template the stack's current desired state has as they
    are, with the same files and environment (a nested stack's parent knows): the rest of
    the template is checked without them, and stored whole.
    """
    _check_updatable(stack)
    how = Checking(project=stack.project, stack_name=stack.name, stack_id=str(stack.id), limits=limits,
                   builtin_types=builtin_types, registry=registry, facade=facade,
                   top=stack.parent_id is None)
    # A PATCH's result depends on the stored desired state too, which the digest leaves out.
    digest = (request_digest.digest(stack_request, _inputs(how, cloud))
              if json_request and not existing else None)
    same = digest is not None and digest == await _stored_digest(pool, stack)
    loaded: Checked | None = None
    if not same:
        stored = await stored_of(pool, stack, whole=existing)

        async def check(asked: request.StackRequest) -> tuple[Checked, bool]:
            return await with_lookups_told(cloud, stack.project, lambda answers: evaluation.run(
                _checked_update_lean, asked, stored, dataclasses.replace(how, cloud=answers),
                existing=existing, clear_parameters=clear_parameters))

        part = stack_request if existing else _without(stack_request, checked)
        loaded, cloudless = await check(part)
        if part is not stack_request and not loaded.template_as_given:
            # The check made another template of the part: not the whole one given.
            loaded, cloudless = await check(stack_request)
        digest = digest if cloudless else None
    async with pool.acquire() as conn, conn.transaction():
        if loaded is None:
            assert stack.template_id is not None
            template_id = stack.template_id
        else:
            template_id = await templates.insert(conn, loaded.stored_template(stack_request), loaded.files,
                                                 loaded.environment, facade, checked_digest=digest)
        plan = await _desire_update(conn, bus, stack, template_id, options=options, converge=converge,
                                    cancel_running=cancel_running)
    await _send(pool, bus, plan, after_commit)


def _without(given: request.StackRequest, checked: AbstractSet[str]) -> request.StackRequest:
    """``given`` with the resources ``checked`` left out of its template, to check the rest."""
    if not checked or not isinstance(given.template, Mapping):
        return given
    resources = given.template.get("resources")
    if not isinstance(resources, Mapping):
        return given
    rest = {name: d for name, d in resources.items() if name not in checked}
    return dataclasses.replace(given, template={**given.template, "resources": rest})


async def update_stack_kept(pool: Connections, bus: Bus, stack: stacks.StackRow, *,
                            options: Options | None = None,
                            after_commit: list[PlanRequest] | None = None) -> None:
    """:func:`update_stack` of a nested stack with the desired state it has (``cancel_running``).

    Its parent knows the template it would give is the one the stack has (a group whose
    members are made of what they were made of): nothing is checked or stored again, and
    the update runs as any other, each resource deciding whether it changes.
    """
    _check_updatable(stack)
    assert stack.template_id is not None, "a nested stack has a desired state from its create"
    async with pool.acquire() as conn, conn.transaction():
        plan = await _desire_update(conn, bus, stack, stack.template_id, options=options, converge=False,
                                    cancel_running=True)
    await _send(pool, bus, plan, after_commit)


def _check_updatable(stack: stacks.StackRow) -> None:
    if stack.action == Action.SUSPEND:
        raise errors.NotSupported("Updating a stack when it is suspended")
    if stack.action == Action.DELETE:
        raise errors.NotSupported("Updating a stack when it is deleting")


async def _desire_update(conn: Conn, bus: Bus, stack: stacks.StackRow, template_id: uuid.UUID, *,
                         options: Options | None, converge: bool, cancel_running: bool) -> PlanRequest:
    if cancel_running:
        await _cancel_running(conn, stack.id, actions=(Action.CREATE, Action.UPDATE))
    extra: dict[str, Any] = {}
    if options is not None:
        extra = {"disable_rollback": options.disable_rollback, "timeout_mins": options.timeout_mins,
                 "tags": list(options.tags)}
    await stacks.set_desired(conn, stack.id, action=Action.UPDATE, template_id=template_id,
                             reason=status.stack_started(Action.UPDATE), **extra)
    return await plan_requests.stage(conn, bus.names, stack, Action.UPDATE, reason="update",
                                     converge=converge)


async def heal_stack(pool: Connections, bus: Bus, stack_id: uuid.UUID, *, template_id: uuid.UUID) -> bool:
    """Converge the stack to the desired state it has (``update --existing --converge`` changing nothing).

    Asked by the observer for drift it may heal. Not while the stack, or one it is nested
    in, is busy (a user's update, a pause at a hook, a delete), or once its desired state is
    no longer the one the drift was seen against: a heal never undoes what a person started.
    False when not asked.
    """
    async with pool.acquire() as conn, conn.transaction():
        stack = await stacks.get(conn, stack_id, for_update=True)
        if stack is None or stack.template_id != template_id:
            return False
        # A nested stack's own heal (as a group's scaling) waits for the stacks it is in too.
        outer = await stacks.get_many(conn, (await stacks.lineage(conn, stack_id))[1:])
        if not all(_at_rest(s) for s in [stack, *outer.values()]):
            return False
        await stacks.set_desired(conn, stack.id, action=Action.UPDATE, template_id=template_id,
                                 reason=status.stack_started(Action.UPDATE))
        plan = await plan_requests.stage(conn, bus.names, stack, Action.UPDATE, reason="heal", converge=True)
    await _send(pool, bus, plan, None)
    return True


def _at_rest(stack: stacks.StackRow) -> bool:
    """Neither busy (an action running, a pause at a hook) nor suspended, deleting or deleted."""
    return (stack.deleted_at is None and stack.status != Status.IN_PROGRESS
            and stack.action not in (Action.SUSPEND, Action.DELETE))


async def delete_stack(pool: Connections, bus: Bus, stack: stacks.StackRow, *,
                       after_commit: list[PlanRequest] | None = None) -> None:
    """Allowed while another action runs: Heat cancels it, and the delete takes over its resources."""
    async with pool.acquire() as conn, conn.transaction():
        await _cancel_running(conn, stack.id)
        await stacks.set_desired(conn, stack.id, action=Action.DELETE, template_id=stack.template_id,
                                 reason=status.stack_started(Action.DELETE))
        plan = await plan_requests.stage(conn, bus.names, stack, Action.DELETE, reason="delete")
    await _send(pool, bus, plan, after_commit)


async def _cancel_running(conn: Conn, stack_id: uuid.UUID, actions: Collection[Action] | None = None) -> None:
    """Stop the stack's running traversal (of one of ``actions``; any if None), with Heat's event.

    Its steps then see they are stale: none starts another resource, and those
    under way are taken over by the traversal that comes next.
    """
    stopped = await stacks.stop_running(conn, stack_id, actions)
    if stopped is not None:
        name, action, traversal_id = stopped
        await events.add(conn, stack_id=stack_id, resource_name=name, physical_resource_id=str(stack_id),
                         resource_type="OS::Heat::Stack", action=action, status=Status.FAILED,
                         reason=f"Stack {action} cancelled", traversal_id=traversal_id)


async def stack_action(pool: Connections, bus: Bus, stack: stacks.StackRow, action: Action, *,
                       after_commit: list[PlanRequest] | None = None) -> None:
    """SUSPEND, RESUME or CHECK: a traversal over the current resources."""
    async with pool.acquire() as conn, conn.transaction():
        await stacks.set_desired(conn, stack.id, action=action, template_id=stack.template_id,
                                 reason=status.stack_started(action))
        plan = await plan_requests.stage(conn, bus.names, stack, action, reason=action.lower())
    await _send(pool, bus, plan, after_commit)


async def cancel_update(pool: Connections, bus: Bus, stack: stacks.StackRow, *, rollback: bool) -> None:
    """Heat's ``cancel_update`` (roll back) and ``cancel_without_rollback`` (stop where it is)."""
    allowed = (Action.UPDATE,) if rollback else (Action.UPDATE, Action.CREATE)
    if stack.status != Status.IN_PROGRESS or stack.action not in allowed:
        raise errors.NotSupported(f"Cancelling update when stack is {stack.stack_status}")
    if rollback:
        async with pool.acquire() as conn, conn.transaction():
            await stacks.set_desired(conn, stack.id, action=Action.ROLLBACK,
                                     template_id=stack.prev_template_id,
                                     reason=status.stack_started(Action.ROLLBACK))
            plan = await plan_requests.stage(conn, bus.names, stack, Action.ROLLBACK, reason="cancel_update")
        await plan_requests.send(pool, bus, plan)
        return
    reason = f"Stack {stack.action} cancelled"
    async with pool.acquire() as conn, conn.transaction():
        await stacks.fail_in_place(conn, stack.id, reason)
        await events.add(conn, stack_id=stack.id, resource_name=stack.name,
                         physical_resource_id=str(stack.id), resource_type="OS::Heat::Stack",
                         action=stack.action, status=Status.FAILED, reason=reason)
