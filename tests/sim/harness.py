"""A deterministic convergence simulator: the real planner and worker, the test picks the order.

Messages go to an in-memory queue instead of JetStream (dropped when their
message id was seen, as JetStream's duplicate window does); the test delivers
them one at a time in an order it chooses (a seeded random order, or by
predicate). A handler's outcome is applied as the consumer would: success and
``Permanent`` remove the message, ``Retry``/``Conflict`` and a crash leave it
queued for redelivery. State lives in the real Postgres database.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable, Sequence
from typing import Any, cast

import asyncpg
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from libs.engine.status import Action
from libs.errors import Permanent, Retry
from libs.messaging.bus import Outgoing
from libs.messaging.consumer import Delivery
from libs.messaging.payloads import Payload, PlanRequest, WorkItem
from libs.messaging.subjects import Names
from libs.resources.base import ResourceType
from libs.resources.registry import Registry, default_registry
from libs.resources.steps import Observed, StepContext, StepResult
from libs.runtime import Runtime
from services.planner.outbox_sweep import sweep_once
from services.planner.planning import handle_plan
from services.worker.steps import Steps

# Deliveries between two rounds of the plan outbox sweep.
SWEEP_EVERY = 25


class SimulatedCrash(Exception):
    """The process died here: nothing after this point happened."""


@dataclasses.dataclass
class Message:
    subject: str
    payload: Payload
    msg_id: str | None
    deliveries: int = 0


class SimBus:
    def __init__(self, names: Names) -> None:
        self.names = names
        self.queue: list[Message] = []
        self.seen: set[str] = set()
        self.tracer = TracerProvider().get_tracer("sim")
        # Plan requests to let through before the publisher dies at the next one (None: never).
        self.plans_before_crash: int | None = None

    async def publish(self, subject: str, payload: Payload, *, msg_id: str | None = None,
                      context: Context | None = None) -> None:
        del context  # the simulation keeps no traces
        if isinstance(payload, PlanRequest) and self.plans_before_crash is not None:
            if self.plans_before_crash == 0:
                self.plans_before_crash = None
                raise SimulatedCrash(f"died before publishing {subject}")
            self.plans_before_crash -= 1
        if msg_id is not None:
            if msg_id in self.seen:
                return
            self.seen.add(msg_id)
        self.queue.append(Message(subject, payload, msg_id))


    async def publish_all(self, outgoing: Sequence[Outgoing]) -> list[BaseException | None]:
        # In order, as the real bus writes them; a crash ends the process mid-batch, not one message.
        for message in outgoing:
            await self.publish(message.subject, message.payload, msg_id=message.msg_id)
        return [None] * len(outgoing)


@dataclasses.dataclass
class SimRuntime:
    pool: asyncpg.Pool
    bus: SimBus
    names: Names
    service: str = "sim"


class Cloud:
    """What the plugins did 'in the cloud', to count physical creations across crashes."""

    def __init__(self) -> None:
        self.creates: dict[str, int] = {}
        self.crash_after_start: set[tuple[str, str]] = set()  # (resource name, action) to crash once
        # "<stack>/<resource>" -> live property values someone changed behind the engine's back.
        self.drift: dict[str, dict[str, Any]] = {}
        self.gone: set[str] = set()  # "<stack>/<resource>" deleted behind the engine's back


class FaultyPlugin:
    """Wraps a real plugin: records creates in the cloud and crashes where told to."""

    def __init__(self, inner: ResourceType, cloud: Cloud) -> None:
        self._inner = inner
        self._cloud = cloud

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def observe(self, ctx: StepContext) -> Observed | None:
        key = f"{ctx.stack_name}/{ctx.resource_name}"
        if key in self._cloud.gone:
            return Observed(gone=True)
        return Observed(properties=self._cloud.drift.get(key, {}))

    def start(self, action: Action, ctx: StepContext) -> StepResult:
        result = self._inner.start(action, ctx)
        key = f"{ctx.stack_name}/{ctx.resource_name}"
        if action in (Action.CREATE, Action.UPDATE):
            self._cloud.drift.pop(key, None)  # the cloud has what was just applied
        if action == Action.CREATE:
            self._cloud.gone.discard(key)
            self._cloud.creates[key] = self._cloud.creates.get(key, 0) + 1
        marker = (ctx.resource_name, str(action))
        if marker in self._cloud.crash_after_start:
            self._cloud.crash_after_start.discard(marker)
            raise SimulatedCrash(f"died after {action} of {ctx.resource_name} reached the cloud")
        return result


def faulty_registry(cloud: Cloud) -> Registry:
    real = default_registry()
    registry = Registry()
    for name in real.types():
        # The simulator builds its own registry of wrapped plugins.
        registry._plugins[name] = cast(ResourceType, FaultyPlugin(real.get(name), cloud))
    return registry


class Simulation:
    def __init__(self, pool: asyncpg.Pool, prefix: str, seed: int) -> None:
        self.names = Names(prefix)
        self.bus = SimBus(self.names)
        self.rt = cast(Runtime, SimRuntime(pool, self.bus, self.names))
        self.cloud = Cloud()
        self.steps = Steps(self.rt, faulty_registry(self.cloud), batch_size=8)
        self.rng = random.Random(seed)
        self.log: list[str] = []

    async def deliver(self, pick: Callable[[Message], bool] | None = None) -> bool:
        """Deliver one queued message (a random one, or the first ``pick`` accepts)."""
        candidates = [m for m in self.bus.queue if pick is None or pick(m)]
        if not candidates:
            return False
        await self._deliver(self.rng.choice(candidates) if pick is None else candidates[0])
        return True

    async def deliver_together(self, count: int) -> bool:
        """Deliver up to ``count`` distinct random messages at once: a worker's batch."""
        if not self.bus.queue:
            return False
        chosen = self.rng.sample(self.bus.queue, min(count, len(self.bus.queue)))
        await asyncio.gather(*(self._deliver(m) for m in chosen))
        return True

    async def _deliver(self, msg: Message) -> None:
        msg.deliveries += 1
        delivery = cast(Delivery, dataclasses.replace(_FAKE_DELIVERY, subject=msg.subject))
        try:
            if isinstance(msg.payload, PlanRequest):
                await handle_plan(self.rt, msg.payload, delivery)
            elif isinstance(msg.payload, WorkItem):
                await self.steps.handle(msg.payload, delivery)
            outcome = "done"
        except Permanent:
            outcome = "dropped"
        except (Retry, SimulatedCrash) as exc:
            outcome = type(exc).__name__
        self.log.append(f"{_label(msg.payload)} -> {outcome}")
        if outcome in ("done", "dropped"):
            self.bus.queue.remove(msg)

    async def run(self, limit: int = 10_000) -> None:
        """Deliver in seeded random order until nothing is queued, now one, now several at once.

        Every so often, and before giving up on an empty queue, the planners' sweep
        publishes plan requests whose publisher died after committing them.
        """
        for count in range(limit):
            if count % SWEEP_EVERY == 0 or not self.bus.queue:
                await sweep_once(self.rt, older_than=0)
            together = self.rng.choice((1, 1, 3, 8))
            if not await (self.deliver() if together == 1 else self.deliver_together(together)):
                return
        raise AssertionError("the simulation did not settle:\n" + "\n".join(self.log[-30:]))


@dataclasses.dataclass(frozen=True)
class _Delivery:
    subject: str
    num_delivered: int
    msg: Any


_FAKE_DELIVERY = _Delivery("", 1, None)


def _label(payload: Payload) -> str:
    if isinstance(payload, WorkItem):
        return f"work {payload.traversal_id[:8]} {payload.node}"
    if isinstance(payload, PlanRequest):
        return f"plan {payload.action}"
    return payload.kind
