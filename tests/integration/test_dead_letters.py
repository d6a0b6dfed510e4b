"""Messages that can never go out or be handled are set aside, and hold up nothing behind them.

Issue 14: one event over NATS's 1 MB payload limit (a status reason of 11.7 MB)
stopped notifications for every project for good. Reasons are now bounded as
Heat bounds them, and what still cannot go out is a dead letter: a row, an
event on its stack and one log line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator

import pytest

from libs import operations
from libs.config import Settings
from libs.consuming import consuming
from libs.db import dead_letters, events, stacks
from libs.engine.status import Action
from libs.errors import Retry
from libs.messaging.consumer import Delivery
from libs.messaging.dispatch import Dispatch
from libs.messaging.payloads import EventNotice, PlanRequest, WorkItem, decode
from libs.resources.test_resource import TestResource
from libs.runtime import Runtime, open_runtime
from libs.template.request import StackRequest
from services.notifier.main import body as notifier_body
from services.planner.planning import give_up_plan
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled
from tests.support import eventually

HUGE = 11_700_000


@contextlib.asynccontextmanager
async def _notices(rt: Runtime) -> AsyncIterator[list[EventNotice]]:
    """Every event notice published on NATS while inside."""
    seen: list[EventNotice] = []

    async def got(msg: object) -> None:
        notice = decode(msg.data)  # type: ignore[attr-defined]
        if isinstance(notice, EventNotice):
            seen.append(notice)
    sub = await rt.bus.nc.subscribe(f"{rt.names.prefix}.events.>", cb=got)
    try:
        yield seen
    finally:
        await sub.unsubscribe()


async def test_reasons_are_bounded_as_heat_bounds_them(settings: Settings) -> None:
    async with open_runtime(settings, "api") as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="bounded",
                                             stack_request=StackRequest(template=hot({})))
        huge = "é" * HUGE  # two bytes each in UTF-8
        async with api.pool.acquire() as conn:
            await events.add(conn, stack_id=made.id, resource_name="r", physical_resource_id=None,
                             resource_type="OS::Heat::None", action="CREATE", status="FAILED", reason=huge)
            await stacks.set_desired(conn, made.id, action=Action.UPDATE, template_id=made.template_id,
                                     reason=huge)
            row = await stacks.get(conn, made.id)
        assert row is not None
        # Heat's Event keeps a reason's first 255 characters; a status reason keeps 65,535 bytes.
        assert ("r", "CREATE_FAILED", "é" * 255) in await event_lines(api.pool, made.id)
        assert row.status_reason == "é" * (65_535 // 2)


async def test_an_event_too_large_for_nats_is_set_aside_while_other_projects_notices_flow(
        settings: Settings, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="ember.notifier")
    template = hot({"a": {"type": "OS::Heat::TestResource"}})
    async with engine(settings) as api, _notices(api) as seen:
        hostile = await operations.create_stack(api.pool, api.bus, project="evil", name="hostile",
                                                stack_request=StackRequest(template=template))
        await settled(api.pool, hostile.id, status="CREATE_COMPLETE")
        async with api.pool.acquire() as conn:
            # The event: an 11.7 MB failure reason (bounded now, so its notice goes out) ...
            bounded = await events.add(conn, stack_id=hostile.id, resource_name="a",
                                       physical_resource_id=None, resource_type="OS::Heat::TestResource",
                                       action="UPDATE", status="FAILED", reason="x" * HUGE)
            # ... and one that no bound makes small enough: a plugin's 2 MB physical id.
            oversized = await events.add(conn, stack_id=hostile.id, resource_name="a",
                                         physical_resource_id="p" * 2_000_000,
                                         resource_type="OS::Heat::TestResource", action="UPDATE",
                                         status="COMPLETE", reason="state changed")
        async with open_runtime(settings, "notifier") as notifier, notifier_body(notifier):
            # Another project's stack, made after both: every one of its events still reaches NATS.
            other = await operations.create_stack(api.pool, api.bus, project="demo", name="other",
                                                  stack_request=StackRequest(template=template))
            await settled(api.pool, other.id, status="CREATE_COMPLETE")
            async with api.pool.acquire() as conn:
                expected = {str(e.id) for e in await events.for_stack(conn, other.id)}

            async def all_out() -> bool:
                return expected <= {n.id for n in seen}
            await eventually(all_out, timeout=30, what="the other project's notices")

            async def aside() -> list[dead_letters.DeadLetter]:
                async with api.pool.acquire() as conn:
                    return await dead_letters.listing(conn)
            [letter] = await eventually(aside, timeout=10, what="a dead letter")
            mine = f"Message set aside (dead letter {letter.id})"

            async def told() -> list[EventNotice]:
                return [n for n in seen if n.resource_status_reason.startswith(mine)]
            [notice] = await eventually(told, timeout=10, what="the hostile stack's notice of it")
        assert (letter.source, letter.msg_id, letter.stack_id) == ("events-outbox", f"event:{oversized}",
                                                                   hostile.id)
        assert letter.size > 2_000_000 and letter.payload is None  # too large to keep
        assert "maximum payload exceeded" in letter.reason
        assert (notice.project, notice.stack_id, notice.resource_name) == ("evil", str(hostile.id), "hostile")
        assert any(n.id == str(bounded) and n.resource_status_reason == "x" * 255 for n in seen)
        assert not any(n.id == str(oversized) for n in seen)
        assert any(r.getMessage().startswith(f"dead letter {letter.id}:") for r in caplog.records)


async def test_a_work_message_that_fails_every_time_is_dead_lettered_and_fails_its_resource(
        settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="ember.worker")
    # A plugin with a bug: its step on one resource raises, at the start and at every check after.
    for method in ("start", "check"):
        real = getattr(TestResource, method)

        def poisoned(self: TestResource, action: object, ctx: object, real: object = real) -> object:
            if getattr(ctx, "resource_name", "") == "poison":
                raise RuntimeError("this step breaks every time")
            return real(self, action, ctx)  # type: ignore[operator]
        monkeypatch.setattr(TestResource, method, poisoned)
    template = hot({"poison": {"type": "OS::Heat::TestResource"}, "fine": {"type": "OS::Heat::TestResource"}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="poisoned",
                                             stack_request=StackRequest(template=template))
        done = await settled(api.pool, made.id, timeout=60)

        async def aside() -> list[dead_letters.DeadLetter]:
            async with api.pool.acquire() as conn:
                return await dead_letters.listing(conn)
        [letter] = await eventually(aside, timeout=10, what="a dead letter")
        rows = await resource_rows(api.pool, made.id)
        lines = await event_lines(api.pool, made.id)
    poison, fine = rows["poison"], rows["fine"]
    reason = "RuntimeError: resources.poison: this step breaks every time"
    assert done.stack_status == "CREATE_FAILED"
    assert (poison.action, poison.status, poison.status_reason) == ("CREATE", "FAILED", reason)
    assert (fine.action, fine.status) == ("CREATE", "COMPLETE")
    assert ("poison", "CREATE_FAILED", reason) in lines
    assert (letter.source, letter.stack_id) == ("workers", made.id)
    assert letter.reason == "failed 5 times: RuntimeError: this step breaks every time"
    assert letter.payload is not None
    item = decode(letter.payload)
    assert isinstance(item, WorkItem) and item.node.endswith(":u") and item.stack_id == str(made.id)
    assert any(r.getMessage().startswith(f"dead letter {letter.id}:") for r in caplog.records)


async def test_a_plan_request_never_settled_is_set_aside_at_max_deliver_and_fails_the_stack(
        settings: Settings) -> None:
    # As if every delivery died with its planner (it never settles, so the planner's own count of
    # failures never grows): JetStream stops at max_deliver, and its advisory ends the request.
    def handlers(rt: Runtime) -> Dispatch:
        async def never_settles(request: PlanRequest, delivery: Delivery) -> None:
            raise Retry(0.0, "as good as a planner that died")

        async def give_up(request: PlanRequest, error: BaseException) -> None:
            await give_up_plan(rt, request, error)
        return Dispatch({PlanRequest: never_settles}, give_ups={PlanRequest: give_up})

    async with open_runtime(settings, "api") as api, open_runtime(settings, "planner") as planner, \
            consuming(lambda rt: rt.names.planners, handlers)(planner):
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="unsettled",
                                             stack_request=StackRequest(template=hot({})))
        done = await settled(api.pool, made.id, timeout=30)

        async def aside() -> list[dead_letters.DeadLetter]:
            async with api.pool.acquire() as conn:
                return await dead_letters.listing(conn)
        [letter] = await eventually(aside, timeout=10, what="a dead letter")
        info = await api.bus.js.consumer_info(api.names.planners.stream, api.names.planners.durable)
    max_deliver = api.names.planners.max_deliver
    reason = f"NeverHandled: plan message delivered {max_deliver} times and never handled"
    assert (done.stack_status, done.status_reason) == ("CREATE_FAILED", reason)
    assert (letter.source, letter.stack_id, letter.reason) == ("planners", made.id, reason.split(": ", 1)[1])
    assert isinstance(decode(letter.payload or b""), PlanRequest)
    assert info.num_pending == 0 and info.num_ack_pending == 0  # gone from the work queue


async def _ember(env: dict[str, str], *args: str) -> tuple[int, str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("EMBER_")} | env
    proc = await asyncio.create_subprocess_exec(sys.executable, "-m", "libs.cli", *args, env=full,
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout=60)
    return await proc.wait(), out.decode()


async def test_an_operator_lists_dead_letters_and_replays_one(settings: Settings,
                                                             ember_env: dict[str, str]) -> None:
    async with open_runtime(settings, "api") as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="replayed",
                                             stack_request=StackRequest(template=hot({})))
        plan = PlanRequest(project="demo", stack_id=str(made.id), reason="check", action="CHECK",
                           request_id="r1")
        subject = api.names.plan("demo", str(made.id))
        async with api.pool.acquire() as conn:
            kept = await dead_letters.add(conn, source="plan-outbox", subject=subject, msg_id=plan.msg_id,
                                          stack_id=made.id, reason="as if NATS had refused it",
                                          payload=plan.to_bytes())
            too_big = await dead_letters.add(conn, source="events-outbox", subject=subject, msg_id="big",
                                             stack_id=None, reason="too large", payload=b"x" * (2 << 20))
        status, listed = await _ember(ember_env, "dead-letters")
        assert status == 0
        assert _line(listed, kept).endswith(f"{subject}  {len(plan.to_bytes())} bytes  stack {made.id}")
        assert f"{2 << 20} bytes" in _line(listed, too_big) and "as if NATS had refused it" in listed

        got: list[bytes] = []

        async def on_plan(msg: object) -> None:
            got.append(msg.data)  # type: ignore[attr-defined]
        sub = await api.bus.nc.subscribe(subject, cb=on_plan)
        try:
            status, said = await _ember(ember_env, "dead-letters", "replay", str(kept))
            assert (status, said.strip()) == (0, f"replayed dead letter {kept} on {subject}")
            async def arrived() -> list[bytes]:
                return got
            await eventually(arrived, timeout=10, what="the replayed request")
        finally:
            await sub.unsubscribe()
        assert decode(got[0]) == plan
        status, said = await _ember(ember_env, "dead-letters", "replay", str(too_big))
        assert status == 1 and f"dead letter {too_big} was too large to keep" in said
        status, listed = await _ember(ember_env, "dead-letters")
        assert _line(listed, too_big) and not _line(listed, kept)
        status, listed = await _ember(ember_env, "dead-letters", "--all")
        assert "  replayed " in _line(listed, kept)


def _line(listing: str, letter_id: int) -> str:
    return next((line for line in listing.splitlines() if line.startswith(f"{letter_id}  ")), "")
