"""``ember planner``: the process entry point."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from libs import lifecycle
from libs.consuming import consuming
from libs.messaging.consumer import Delivery, Handler
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import PlanRequest, Probe
from libs.runtime import Runtime
from services.planner import node_sweep
from services.planner.outbox_sweep import sweeping
from services.planner.planning import give_up_plan, handle_plan


def handlers(rt: Runtime) -> Handler:
    async def plan(request: PlanRequest, delivery: Delivery) -> None:
        await handle_plan(rt, request, delivery)

    async def give_up(request: PlanRequest, error: BaseException) -> None:
        await give_up_plan(rt, request, error)

    return Dispatch({Probe: rt.answer_probe, PlanRequest: plan}, give_ups={PlanRequest: give_up})


_consuming = consuming(lambda rt: rt.names.planners, handlers)


@contextlib.asynccontextmanager
async def body(rt: Runtime) -> AsyncIterator[None]:
    async with _consuming(rt), sweeping(rt), node_sweep.sweeping(rt):
        yield


def main() -> None:
    lifecycle.run("planner", body)
