"""NATS with authorization: nobody anonymous, each service within its permissions, each
integration within its project, and a stack still runs end to end."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import nats.errors
import pytest
from aiohttp.test_utils import TestServer
from nats.aio.client import Client
from nats.js import api as js_api
from opentelemetry import trace

from libs.config import Settings
from libs.embedded.nats import EmbeddedNats
from libs.embedded.process import free_port
from libs.messaging import permissions, server_auth
from libs.messaging.bus import Bus
from libs.messaging.payloads import (
    EventNotice,
    HookClearReply,
    HookClearRequest,
    ScaleReply,
    ScaleRequest,
    WorkItem,
    decode,
)
from libs.messaging.subjects import SERVICES, Names
from libs.runtime import open_runtime
from services.api.app import make_app
from services.notifier.main import body as notifier_body
from services.planner.main import body as planner_body
from services.worker.main import body as worker_body
from tests.conftest import AuthNats
from tests.integration.engine_support import hot
from tests.support import Servers, eventually

COMPOSE_NATS = Path(__file__).resolve().parents[2] / "compose" / "nats" / "auth.conf"


async def _refused(errors: list[str], what: str) -> bool:
    return any(f"permissions violation for {what}" in e for e in errors)


async def test_an_anonymous_connection_or_a_wrong_password_is_refused(auth_nats: AuthNats) -> None:
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await auth_nats.connect(None, [])
    wrong = dataclasses.replace(auth_nats.auth.service("api"), password="guessed")
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await auth_nats.connect(wrong, [])


async def test_each_service_is_refused_outside_its_permissions(auth_nats: AuthNats) -> None:
    names = Names(auth_nats.prefix)
    auth = auth_nats.auth
    admin = await auth_nats.connect(auth.admin, [])
    try:
        async with Bus.connect(auth_nats.url, names, trace.NoOpTracer(), client_name="setup",
                               user=auth.admin.user, password=auth.admin.password,
                               inbox_prefix=auth.admin.inbox_prefix) as bus:
            await bus.ensure_topology()
        stack_id = str(uuid.uuid4())
        item = WorkItem(stack_id=stack_id, traversal_id=str(uuid.uuid4()), node="r:update")
        # (service, what it tries, the refusal the server answers)
        tries: list[tuple[str, Callable[[Client], Awaitable[Any]], str]] = [
            ("notifier", lambda nc: nc.jetstream(timeout=1).publish(names.work(stack_id), item.to_bytes()),
             f'publish to "{names.work(stack_id)}"'),
            ("api", lambda nc: _pull_one(nc, names.workers.stream, names.workers.durable),
             f'publish to "$js.api.consumer.msg.next.{names.workers.stream.lower()}.workers"'),
            ("api", lambda nc: _next(nc, names.work_all), f'subscription to "{names.work_all}"'),
            # The observer asks for heals (plan requests), never for work.
            ("observer", lambda nc: nc.jetstream(timeout=1).publish(names.work(stack_id), item.to_bytes()),
             f'publish to "{names.work(stack_id)}"'),
            ("worker", lambda nc: nc.jetstream(timeout=1).publish(names.events("demo", stack_id), b"{}"),
             f'publish to "{names.events("demo", stack_id)}"'),
            ("planner", lambda nc: _next(nc, names.hook_clear_all),
             f'subscription to "{names.hook_clear_all}"'),
            ("notifier", lambda nc: nc.jetstream(timeout=1).delete_stream(names.work_stream.name),
             f'publish to "$js.api.stream.delete.{names.work_stream.name.lower()}"'),
        ]
        for service, attempt, refusal in tries:
            errors: list[str] = []
            nc = await auth_nats.connect(auth.service(service), errors)
            try:
                with pytest.raises((nats.errors.TimeoutError, TimeoutError)):
                    await attempt(nc)
                await eventually(lambda: _refused(errors, refusal), timeout=5,  # noqa: B023
                                 what=f"{service} refused: {refusal}")
            finally:
                await nc.close()
        # Nothing the notifier tried reached the work queue.
        info = await admin.jetstream().stream_info(names.work_stream.name)
        assert info.state.messages == 0
    finally:
        await admin.close()


async def _pull_one(nc: Client, stream: str, durable: str) -> None:
    sub = await nc.jetstream(timeout=1).pull_subscribe_bind(durable=durable, stream=stream)
    await sub.fetch(1, timeout=1)


async def _next(nc: Client, subject: str) -> None:
    sub = await nc.subscribe(subject)
    await nc.flush()
    await sub.next_msg(timeout=1)


def _template() -> dict[str, Any]:
    return hot({
        "held": {"type": "OS::Heat::TestResource", "properties": {"value": "h"}},
        "asg": {"type": "OS::Heat::AutoScalingGroup", "properties": {
            "min_size": 1, "max_size": 4, "desired_capacity": 1,
            "resource": {"type": "OS::Heat::TestResource", "properties": {"value": "m"}}}}})


async def test_a_stack_runs_under_auth_and_integrations_stay_in_their_project(
        settings: Settings, auth_nats: AuthNats,
        aiohttp_server: Callable[..., Awaitable[TestServer]]) -> None:
    port = free_port()
    names = Names(auth_nats.prefix)
    base = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port)
    alpha_errors: list[str] = []
    beta_errors: list[str] = []
    async with (open_runtime(auth_nats.settings_for(base, "planner"), "planner") as planner,
                planner_body(planner),
                open_runtime(auth_nats.settings_for(base, "worker"), "worker") as worker,
                worker_body(worker),
                open_runtime(auth_nats.settings_for(base, "notifier"), "notifier") as notifier,
                notifier_body(notifier),
                aiohttp.ClientSession() as http):
        await aiohttp_server(make_app(auth_nats.settings_for(base, "api")), port=port)
        alpha = await auth_nats.connect(auth_nats.auth.project("alpha"), alpha_errors)
        beta = await auth_nats.connect(auth_nats.auth.project("beta"), beta_errors)
        try:
            url = f"http://127.0.0.1:{port}/v1/alpha/stacks"
            body = {"stack_name": "guarded", "template": _template(),
                    "environment": {"resource_registry": {"resources": {"held": {"hooks": "pre-create"}}}}}
            async with http.post(url, json=body) as r:
                assert r.status == 201, await r.text()
                stack_id = (await r.json())["stack"]["id"]

            async def paused() -> bool:
                async with http.get(f"{url}/guarded/{stack_id}/resources/held/events") as r:
                    if r.status != 200:  # not made yet
                        return False
                    shown = (await r.json())["events"]
                reasons = [e["resource_status_reason"] for e in shown]
                return reasons[-1:] == ["CREATE paused until Hook pre-create is cleared"]
            await eventually(paused, timeout=30, what="held paused at its hook")

            # beta may not clear alpha's hook, scale alpha's group or read alpha's events.
            await _refused_to_beta(auth_nats, beta, beta_errors, stack_id)
            assert await paused()

            # alpha may, and its stack completes.
            clear = HookClearRequest(resource="held", hook="pre-create").to_bytes()
            reply = decode((await alpha.request(names.hook_clear("alpha", stack_id), clear, timeout=10)).data)
            assert reply == HookClearReply(cleared=True)

            async def complete() -> str | None:
                async with http.get(f"{url}/guarded/{stack_id}") as r:
                    status: str = (await r.json())["stack"]["stack_status"]
                return status if status.endswith("COMPLETE") else None
            assert await eventually(complete, timeout=30, what="the stack complete") == "CREATE_COMPLETE"
            scaled = decode((await alpha.request(names.scale("alpha", stack_id, "asg"),
                                                 ScaleRequest(capacity=2).to_bytes(), timeout=10)).data)
            assert scaled == ScaleReply(capacity=2)
            # alpha reads its own events from JetStream history.
            events = await _history(alpha, names, "alpha")
            first = decode((await events.next_msg(timeout=10)).data)
            assert isinstance(first, EventNotice) and first.stack_id == stack_id
            assert not alpha_errors
            # No service met a refusal on the way (the server logs each one with its user).
            logged = auth_nats.log.read_text()
            assert not [line for line in logged.splitlines() if "Violation" in line
                        and any(f'"$G/user:{s}"' in line for s in SERVICES)], logged[-3000:]
        finally:
            await alpha.close()
            await beta.close()


async def _refused_to_beta(auth_nats: AuthNats, beta: Client, errors: list[str], stack_id: str) -> None:
    """Each of beta's tries on alpha's stack is refused: an error to beta, a line in the server's log."""
    names = Names(auth_nats.prefix)
    clear = HookClearRequest(resource="held", hook="pre-create").to_bytes()
    with pytest.raises(nats.errors.TimeoutError):
        await beta.request(names.hook_clear("alpha", stack_id), clear, timeout=1)
    with pytest.raises(nats.errors.TimeoutError):
        await beta.request(names.scale("alpha", stack_id, "asg"), ScaleRequest(capacity=3).to_bytes(),
                           timeout=1)
    with pytest.raises(nats.errors.TimeoutError):
        await _next(beta, names.project_events("alpha"))
    with pytest.raises(nats.errors.TimeoutError):
        await _history(beta, names, "alpha")
    for refusal in (f'publish to "{names.hook_clear("alpha", stack_id)}"',
                    f'publish to "{names.scale("alpha", stack_id, "asg")}"',
                    f'subscription to "{names.project_events("alpha")}"',
                    f'publish to "$js.api.consumer.create.{names.events_stream.name.lower()}.'):
        await eventually(lambda: _refused(errors, refusal), timeout=5,  # noqa: B023
                         what=f"beta refused: {refusal}")
    logged = auth_nats.log.read_text()
    refused = names.hook_clear("alpha", stack_id)
    assert f'"$G/user:project.beta" - Publish Violation - Subject "{refused}"' in logged, logged[-2000:]


async def _history(nc: Client, names: Names, project: str) -> Any:
    """Every event of ``project`` kept in JetStream, through a push consumer to this user's inbox."""
    inbox = nc.new_inbox()
    sub = await nc.subscribe(inbox)
    await nc.jetstream(timeout=1).add_consumer(names.events_stream.name, js_api.ConsumerConfig(
        name=f"reader-{uuid.uuid4().hex[:8]}", filter_subject=names.project_events(project),
        deliver_subject=inbox, ack_policy=js_api.AckPolicy.NONE, deliver_policy=js_api.DeliverPolicy.ALL))
    return sub


async def test_compose_nats_config_admits_each_service_to_its_own_topology_and_no_one_else(
        servers: Servers) -> None:
    """compose/nats/auth.conf on a real nats-server, passwords from its environment as compose gives them."""
    names = Names()
    passwords = dict(line.split("=", 1) for line in server_auth.password_lines(names).splitlines())
    server = EmbeddedNats(servers.scratch / f"compose-nats-{uuid.uuid4().hex[:6]}",
                          config=COMPOSE_NATS, env=passwords)
    url = server.start()
    try:
        with pytest.raises(nats.errors.Error, match="Authorization Violation"):
            await nats.connect(url, allow_reconnect=False)
        for service in SERVICES:
            user = server_auth.service_user(service)
            row = permissions.uses(names, service)
            async with Bus.connect(url, names, trace.NoOpTracer(), client_name=service, user=user,
                                   password=passwords[server_auth.password_variable(user)],
                                   inbox_prefix=permissions.inbox_prefix(names, service)) as bus:
                await bus.ensure_topology(streams=row.streams, consumers=row.consumers)
    finally:
        server.stop()
