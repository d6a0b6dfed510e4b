"""NATS_SIGNAL through the engine, with the test as the server's agent: it publishes its answer on
the subject its derived config names, and the worker's deployment-signals consumer applies it as the
API applies a POST to the resource's signal route."""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from nats.js.api import PubAck

from libs.config import Settings
from libs.db import dead_letters
from libs.runtime import Runtime
from tests.integration.engine_support import event_lines, resource_rows, settled
from tests.integration.test_software_deployment import (
    MakeServer,
    create,
    deployment,
    inputs,
    outputs,
    running,
    server_of,
    template,
)
from tests.support import eventually


async def _publish(rt: Runtime, subject: str, body: bytes, msg_id: str) -> PubAck:
    return await rt.bus.js.publish(subject, body, headers={"Nats-Msg-Id": msg_id})


async def _all_handled(rt: Runtime) -> bool:
    backlog = await rt.bus.backlog(rt.names.deployment_signals)
    return backlog.pending == 0 and backlog.unacked == 0


async def test_a_published_answer_completes_the_deployment_once(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_nats", template(transport="NATS_SIGNAL"))
        server = await server_of(rt, stack.id)
        given = await agent.given(server, "CREATE")
        values = inputs(given)
        subject = rt.names.signal("demo", str(stack.id), "deployment")
        assert values["deploy_signal_transport"] == "NATS_SIGNAL"
        assert values["deploy_signal_subject"] == subject
        assert "deploy_signal_id" not in values and "deploy_signal_verb" not in values
        body = orjson.dumps({"deploy_stdout": "hello x\n", "deploy_stderr": "", "deploy_status_code": 0,
                             "result": "done"})
        # An agent publishing again (its ack lost) within the stream's window: kept once.
        first = await _publish(rt, subject, body, given.hash or "")
        again = await _publish(rt, subject, body, given.hash or "")
        assert (first.duplicate, again.duplicate, again.seq) == (None, True, first.seq)
        done = await settled(rt.pool, stack.id)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert outputs(done)["result"] == "done" and outputs(done)["stdout"] == "hello x\n"
        row = await deployment(rt, str((await resource_rows(rt.pool, stack.id))["deployment"].physical_id))
        assert (row.status, row.status_reason) == ("COMPLETE", "Outputs received")

        # Past the window (another message): applied as a second POST is, changing nothing.
        await _publish(rt, subject, orjson.dumps({"deploy_status_code": 1, "result": "late"}), "late")

        async def both() -> list[tuple[str, str, str]] | None:
            lines = [line for line in await event_lines(rt.pool, stack.id) if line[1].startswith("SIGNAL")]
            return lines if len(lines) == 2 else None
        signals = await eventually(both, what="the two SIGNAL events")
        assert signals == [("deployment", "SIGNAL_IN_PROGRESS", f"Signal: deployment {row.id} succeeded"),
                           ("deployment", "SIGNAL_COMPLETE", "Unknown")]
        assert (await deployment(rt, str(row.id))).output_values["result"] == "done"


async def test_a_failing_answer_fails_the_deployment_with_its_stderr(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_nats_fail", template(transport="NATS_SIGNAL"))
        given = await agent.given(await server_of(rt, stack.id), "CREATE")
        body = {"deploy_stdout": "", "deploy_stderr": "disk full\n", "deploy_status_code": 2}
        await _publish(rt, inputs(given)["deploy_signal_subject"], orjson.dumps(body), "fail")
        done = await settled(rt.pool, stack.id)
        assert done.stack_status == "CREATE_FAILED"
        assert done.status_reason == (
            "Resource CREATE failed: Error: resources.deployment: Deployment to server failed: "
            "deploy_status_code : Deployment exited with non-zero status code: 2; deploy_stderr: disk full")


async def test_signals_for_nothing_are_acked_and_a_body_not_json_is_set_aside(
        settings: Settings, aiohttp_server: MakeServer) -> None:
    async with running(settings, aiohttp_server) as (rt, agent):
        stack = await create(rt, "sw_nats_scope", template(transport="NATS_SIGNAL"))
        given = await agent.given(await server_of(rt, stack.id), "CREATE")
        body = orjson.dumps({"deploy_status_code": 0, "result": "not mine"})
        nowhere: list[tuple[str, bytes]] = [
            # Another project's subject naming this stack: not this stack's project, not found.
            (rt.names.signal("other", str(stack.id), "deployment"), body),
            (rt.names.signal("demo", str(uuid.uuid4()), "deployment"), body),  # no such stack
            (rt.names.signal("demo", str(stack.id), "missing"), body),  # no such resource
            (rt.names.signal("demo", "not-a-stack-id", "deployment"), body),
            (rt.names.signal("demo", str(stack.id), "server"), body),  # a resource with no deployment
        ]
        for n, (subject, data) in enumerate(nowhere):
            await _publish(rt, subject, data, f"nowhere-{n}")
        await _publish(rt, inputs(given)["deploy_signal_subject"], b"{not json", "garbled")
        await eventually(lambda: _all_handled(rt), what="every signal handled, none redelivered")

        async def letters() -> list[Any] | None:
            async with rt.pool.acquire() as conn:
                found = [d for d in await dead_letters.listing(conn) if d.source == "deployment-signals"]
            return found or None
        [letter] = await eventually(letters, what="the dead letter")
        assert letter.subject == inputs(given)["deploy_signal_subject"] and "not JSON" in letter.reason
        # None of them touched the stack: it still waits for its answer.
        assert not [line for line in await event_lines(rt.pool, stack.id) if line[1].startswith("SIGNAL")]
        assert (await deployment(rt, str((await resource_rows(rt.pool, stack.id))["deployment"].physical_id))
                ).status == "IN_PROGRESS"
