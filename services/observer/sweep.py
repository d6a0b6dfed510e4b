"""One pass of the observer: list the cloud projects it holds, compare, record drift once per change.

A pass lists, of the cloud projects it holds, the resource types whose listing is
due (:mod:`libs.engine.observe_schedule`: a stack's ``convergence.interval``, else
the type's, else the installation's). Each cloud project (a ``clouds.yaml`` entry
and project, :class:`~libs.cloud.caller.CloudTarget`) is listed by one observer:
it holds that project's lease in PostgreSQL (:mod:`libs.db.observer_leases`),
renews it every pass, and holds at most its share of the projects, so several
observers split them and one that stops hands its share on when its leases run
out. A project's resources of each type are one list call (paged by
openstacksdk), never a call per resource. What a type's entry shows is compared
with the record by the pure core (:mod:`libs.engine.drift`); a change opens or
closes a drift record and writes an event, in one transaction that first checks
the resource is still as it was listed (a traversal's own changes are not drift).
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Mapping, Sequence

import asyncpg

from libs import operations
from libs.cloud.caller import CloudCaller, CloudTarget
from libs.cloud.targets import NoCloudConfigured, target_for
from libs.config import CloudSettings
from libs.db import Conn, drift, events, observer_leases, resources, stacks
from libs.engine import status
from libs.engine.drift import DETECTED, RESOLVED, Closed, Drift, Response, Shown, reconcile, respond, seen
from libs.engine.observe_schedule import Intervals, Schedule
from libs.engine.status import Action, Status
from libs.messaging.bus import Bus
from libs.resources.base import cloud_tag
from libs.resources.registry import Registry
from libs.resources.steps import Observed, StepContext
from libs.telemetry import logs
from libs.template.convergence import ConvergencePolicy, DriftPolicy
from libs.template.convergence import parse as parse_policy

log = logs.logger("observer")
# Services count as up while they reported within this many of their intervals (Heat's rule).
_UP_WITHIN = 2.0
# Heals of one resource counted against EMBER_HEAL_LIMIT: those asked within this window.
HEAL_WINDOW_SECONDS = 3600.0


@dataclasses.dataclass(frozen=True)
class Observer:
    """What a pass needs: who this observer is, where it reads and writes, what it calls."""

    holder: uuid.UUID
    pool: asyncpg.Pool
    caller: CloudCaller
    cloud: CloudSettings
    registry: Registry
    intervals: Intervals
    # Plan requests of heals go out here (None: this observer only reports).
    bus: Bus | None = None
    default_policy: DriftPolicy = DriftPolicy.OBSERVE
    heal_limit: int = 3

    # When each listing it holds is due next: its own, kept from pass to pass.
    schedule: Schedule = dataclasses.field(default_factory=Schedule)

    @property
    def lease_seconds(self) -> float:
        # A pass runs at least every default interval and renews the leases: over two of them, one
        # that runs late keeps its lease, and a dead holder's share moves on soon.
        return 2 * self.intervals.default + min(self.intervals.default, 5.0)

    def listed_types(self) -> list[str]:
        return sorted(t for t in self.registry.types() if self.registry.get(t).list_call() is not None)


@dataclasses.dataclass
class Pass:
    """What one pass did, for its log line and for the tests."""

    targets: int = 0
    held: int = 0
    list_calls: int = 0
    compared: int = 0
    opened: int = 0
    closed: int = 0
    heals: int = 0
    # (cloud project, resource type) of each listing made, in order.
    listed: list[tuple[CloudTarget, str]] = dataclasses.field(default_factory=list)


async def sweep_once(ob: Observer) -> Pass:
    done = Pass()
    async with ob.pool.acquire() as conn:
        async with conn.transaction():  # a record closed here has its event
            for closed in await drift.close_unwatched(conn):
                done.closed += 1
                await _event(conn, closed, Status.COMPLETE,
                             f"{RESOLVED}: {closed.closed.describe(closed.resource_name)}",
                             Shown(closed.drift, closed.action_taken, resolved=True))
        rows = await drift.watched(conn, ob.listed_types())
        observers = await observer_leases.observers_up(conn, _UP_WITHIN)
    by_target: dict[CloudTarget, list[drift.Watched]] = defaultdict(list)
    for row in rows:
        try:
            by_target[target_for(ob.cloud, row.project)].append(row)
        except NoCloudConfigured:
            continue  # nothing of that project was made in a cloud Ember can list
    done.targets = len(by_target)
    mine = await _take_share(ob, sorted(by_target, key=_lease_key), observers)
    done.held = len(mine)
    ob.schedule.forget_except((t, row.type) for t in mine for row in by_target[t])
    policies: dict[uuid.UUID, ConvergencePolicy] = {}  # each stack's, parsed once a pass
    for target in mine:
        # Renewed before each project's listing: a pass over many projects can outlast the lease
        # it took at its start, and a project another observer took meanwhile is left to it.
        async with ob.pool.acquire() as conn:
            if not await observer_leases.take(conn, *_lease_key(target), ob.holder, ob.lease_seconds):
                continue
        await _observe(ob, target, by_target[target], policies, done)
    return done


def _lease_key(target: CloudTarget) -> tuple[str, str]:
    return target.cloud, target.project or ""


async def _take_share(ob: Observer, targets: Sequence[CloudTarget], observers: int) -> list[CloudTarget]:
    """The targets this observer lists this pass: those it holds first, up to its share of them all."""
    share = math.ceil(len(targets) / observers) if targets else 0
    mine: list[CloudTarget] = []
    async with ob.pool.acquire() as conn:
        held = await observer_leases.held(conn, ob.holder)
        for target in sorted(targets, key=lambda t: _lease_key(t) not in held):
            if len(mine) >= share:
                break
            if await observer_leases.take(conn, *_lease_key(target), ob.holder, ob.lease_seconds):
                mine.append(target)
        extra = held - {_lease_key(t) for t in mine}
        if extra:  # more than its share (another observer started): hand those on now
            await observer_leases.release(conn, ob.holder, extra)
    return mine


def _policy(ob: Observer, row: drift.Watched, policies: dict[uuid.UUID, ConvergencePolicy]
            ) -> ConvergencePolicy:
    policy = policies.get(row.stack_id)
    if policy is None:
        policy = policies[row.stack_id] = parse_policy(row.convergence, ob.default_policy)
    return policy


async def _observe(ob: Observer, target: CloudTarget, rows: Sequence[drift.Watched],
                   policies: dict[uuid.UUID, ConvergencePolicy], done: Pass) -> None:
    by_type: dict[str, list[drift.Watched]] = defaultdict(list)
    for row in rows:
        by_type[row.type].append(row)
    draw = random.SystemRandom()
    for type_name, group in sorted(by_type.items()):
        now = time.monotonic()
        if not ob.schedule.due((target, type_name), now):
            continue
        interval = ob.intervals.listing(type_name, {_policy(ob, r, policies).interval for r in group})
        ob.schedule.listed((target, type_name), now, interval, draw.random())
        plugin = ob.registry.get(type_name)
        call = plugin.list_call()
        assert call is not None  # watched() reads only listed types
        answer = (await ob.caller.call(target, [call]))[call.key]
        done.list_calls += 1
        done.listed.append((target, type_name))
        if answer.error is not None:
            # Nothing can be said of what a listing did not show: no drift this pass.
            log.warning("listing %s in %s failed: %s", call.describe(), target.cloud, answer.error.message)
            continue
        listed = {str(item.get("id")): item for item in answer.value or [] if isinstance(item, Mapping)}
        observed = [(row, plugin.observe_listed(_context(row), listed.get(row.physical_id))) for row in group]
        done.compared += len(group)
        # What may change a record: a drift seen, or one open (it may have ended, or policy changed).
        moving = [(row, live, sight) for row, live in observed
                  if (sight := seen(row.properties, live)) is not None or row.open]
        if moving:
            await _record(ob, moving, policies, done)


def _context(row: drift.Watched) -> StepContext:
    """What a type's ``observe_listed`` is given: the record, as a step would see it."""
    now = time.time()
    data = {k: v for k, v in row.data.items() if not k.startswith("ember_")}  # the worker's own keys
    return StepContext(stack_id=str(row.stack_id), stack_name=row.stack_name, resource_name=row.name,
                       physical_id=row.physical_id, properties=row.properties or {}, old_properties=None,
                       data=data, now=now, started_at=now, short_id="",
                       cloud_tag=cloud_tag(row.stack_id, row.resource_id))


async def _record(ob: Observer, sights: Sequence[tuple[drift.Watched, Observed | None, Drift | None]],
                  policies: dict[uuid.UUID, ConvergencePolicy], done: Pass) -> None:
    """Each sight under its stack's policy: records opened or closed, fields accepted, heals asked."""
    heal: dict[uuid.UUID, drift.Watched] = {}
    async with ob.pool.acquire() as conn:
        for row, live, sight in sights:
            policy = _policy(ob, row, policies).for_resource(row.name)
            async with conn.transaction():
                if not await drift.unchanged(conn, row):
                    continue  # a traversal acted on it since it was listed: seen again next pass
                heals = (await drift.heals_since(conn, row.stack_id, row.name, HEAL_WINDOW_SECONDS)
                         if policy.policy == DriftPolicy.HEAL else 0)
                verdict = respond(sight, policy, heals_left=heals < ob.heal_limit)
                change = reconcile(row.open, verdict.drift)
                if change.nothing:
                    continue
                if change.close and row.open_id is not None and row.open is not None:
                    closed_as = await drift.close(conn, row.open_id)
                    done.closed += 1
                    if change.open is None and closed_as is not None:
                        await _event(conn, row, Status.COMPLETE,
                                     f"{RESOLVED}: {Closed.AGREES.describe(row.name)}",
                                     Shown(row.open, closed_as, resolved=True))
                if change.open is None or await drift.open_record(
                        conn, row, change.open, verdict.response) is None:
                    continue
                done.opened += 1
                what = change.open.describe(row.name)
                accepted = verdict.response == Response.ACCEPTED
                await _event(conn, row, Status.FAILED,
                             f"{DETECTED}: {what}{verdict.response.said(verdict.accepted)}",
                             Shown(change.open, verdict.response, resolved=accepted))
                if verdict.accepted and live is not None:
                    await resources.accept_properties(conn, row.resource_id, row.version, {
                        **(row.properties or {}), **{f: live.properties.get(f) for f in verdict.accepted}})
                if verdict.response == Response.HEALING:
                    heal.setdefault(row.stack_id, row)
                if verdict.response == Response.LIMIT:
                    await _give_up(conn, row, what, heals, ob.heal_limit)
                with logs.log_context(stack_id=str(row.stack_id), resource=row.name):
                    log.info("drift: %s (%s)", what, verdict.response.value)
    for row in heal.values():
        if ob.bus is not None and row.template_id is not None and await operations.heal_stack(
                ob.pool, ob.bus, row.stack_id, template_id=row.template_id):
            done.heals += 1


async def _give_up(conn: Conn, row: drift.Watched, what: str, heals: int, limit: int) -> None:
    """Drift the heals did not end: the stack fails (CHECK_FAILED, as Heat's stack check) with a
    reason that says what was tried, and its event goes out as every event does (NATS, webhooks)."""
    reason = status.resource_failed(Action.CHECK, f"{what}; healed {heals} time(s) within the last hour"
                                    f" (EMBER_HEAL_LIMIT {limit}): not healed again, left for an operator")
    await stacks.set_state(conn, row.stack_id, action=Action.CHECK, status=Status.FAILED, reason=reason)
    await events.add(conn, stack_id=row.stack_id, resource_name=row.stack_name,
                     physical_resource_id=str(row.stack_id), resource_type="OS::Heat::Stack",
                     action=Action.CHECK, status=Status.FAILED, reason=reason)


async def _event(conn: Conn, of: drift.Watched | drift.Unwatched, state: Status, reason: str,
                 shown: Shown) -> None:
    # Heat's stack check reports a resource the cloud lost as CHECK_FAILED: drift reads the same.
    name = of.name if isinstance(of, drift.Watched) else of.resource_name
    await events.add(conn, stack_id=of.stack_id, resource_name=name,
                     physical_resource_id=of.physical_id, resource_type=of.type, action=Action.CHECK,
                     status=state, reason=reason, properties=shown.properties())
