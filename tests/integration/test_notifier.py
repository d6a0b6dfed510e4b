"""The notifier: events on NATS, and signed webhook deliveries of events and hooks, retried and recorded."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import hashlib
import hmac
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from yarl import URL

from libs.config import Settings
from libs.messaging.payloads import EventNotice, decode
from libs.runtime import Runtime, open_runtime
from services.api.app import make_app
from services.notifier.main import body as notifier_body
from tests.integration.engine_support import engine, hot
from tests.integration.webhooks import Receiver, receiving
from tests.support import eventually

Client = TestClient[web.Request, web.Application]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    async with receiving() as running:
        yield running


@contextlib.asynccontextmanager
async def notifier(settings: Settings) -> AsyncIterator[Runtime]:
    async with open_runtime(settings, "notifier") as rt, notifier_body(rt):
        yield rt


@pytest.fixture
async def running(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
                  ) -> AsyncIterator[tuple[Client, Runtime, Settings]]:
    quick = dataclasses.replace(settings, notify_retry_seconds=0.05, hook_sweep_seconds=0.2)
    async with engine(quick) as rt:
        yield await aiohttp_client(make_app(quick)), rt, quick


async def _create(api: Client, name: str, template: dict[str, Any], environment: dict[str, Any]) -> str:
    async with api.post("/v1/demo/stacks", json={"stack_name": name, "template": template,
                                                  "environment": environment}) as r:
        assert r.status == 201, await r.text()
        return f"/v1/demo/stacks/{name}/{(await r.json())['stack']['id']}"


async def _status(api: Client, path: str) -> str:
    async with api.get(path) as r:
        status: str = (await r.json())["stack"]["stack_status"]
        return status


def _signed(headers: dict[str, str], body: bytes, secret: str) -> bool:
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(headers.get("X-Ember-Signature", ""), expected)


async def test_a_hook_reaches_a_webhook_whose_link_clears_it(
        running: tuple[Client, Runtime, Settings], receiver: tuple[Receiver, str]) -> None:
    api, _, settings = running
    got, url = receiver
    wanted = {"url": url, "secret": "s3cret", "kinds": ["hook"]}
    async with api.post("/v1/demo/subscriptions", json=wanted) as r:
        assert r.status == 201
        sub = (await r.json())["subscription"]
    assert sub["secret"] == "s3cret"
    async with notifier(settings):
        path = await _create(api, "approve", hot({"db": {"type": "OS::Heat::TestResource"}}),
                             {"resource_registry": {"resources": {"db": {"hooks": "pre-create"}}}})

        def reached() -> dict[str, Any] | None:
            return next((b for b in got.bodies() if b["notice"]["state"] == "reached"), None)
        notice = await eventually(_async(reached), timeout=30, what="the hook notice")
        headers, raw = got.got[0]
        assert _signed(headers, raw, "s3cret") and headers["X-Ember-Kind"] == "hook"
        assert (notice["notice"]["resource_name"], notice["notice"]["hook"]) == ("db", "pre-create")
        clear = notice["links"]["clear"]
        assert clear["href"].endswith(f"{path}/resources/db/signal")
        # A program acts on the link as a person would, through the API.
        async with api.post(URL(clear["href"]).path, json=clear["body"]) as r:
            assert r.status == 200
        await eventually(lambda: _is(api, path, "CREATE_COMPLETE"), timeout=30, what="the create")
        await eventually(_async(lambda: any(b["notice"]["state"] == "cleared" for b in got.bodies()) or None),
                         timeout=30, what="the cleared notice")
    async with api.get(f"/v1/demo/subscriptions/{sub['id']}/deliveries") as r:
        deliveries = (await r.json())["deliveries"]
    assert {d["status"] for d in deliveries} == {"delivered"} and len(deliveries) == 2
    assert all(d["attempts"] == 1 for d in deliveries)


def _async(probe: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return probe()
    return run


async def _is(api: Client, path: str, status: str) -> bool | None:
    return await _status(api, path) == status or None


async def test_every_event_goes_out_on_nats_with_its_trace(running: tuple[Client, Runtime, Settings]) -> None:
    api, rt, settings = running
    seen: list[tuple[EventNotice, dict[str, str]]] = []

    async def collect(msg: Any) -> None:
        notice = decode(msg.data)
        assert isinstance(notice, EventNotice)
        seen.append((notice, dict(msg.headers or {})))

    sub = await rt.bus.nc.subscribe(f"{rt.names.prefix}.events.demo.>", cb=collect)
    try:
        async with notifier(settings):
            path = await _create(api, "told", hot({"a": {"type": "OS::Heat::TestResource"}}), {})
            await eventually(lambda: _is(api, path, "CREATE_COMPLETE"), timeout=30, what="the create")
            async with api.get(f"{path}/events") as r:
                expected = {e["id"] for e in (await r.json())["events"]}
            await eventually(_async(lambda: {n.id for n, _ in seen} >= expected or None), timeout=30,
                             what="every event on NATS")
    finally:
        await sub.unsubscribe()
    assert len([n for n, _ in seen if n.id in expected]) == len(expected)  # once each
    reasons = {(n.resource_name, n.resource_status, n.resource_status_reason) for n, _ in seen}
    assert ("told", "CREATE_COMPLETE", "Stack CREATE completed successfully") in reasons
    assert all(h.get("traceparent") for _, h in seen)  # the operation's trace goes along


async def test_a_refused_delivery_is_retried_and_a_restart_sends_nothing_twice(
        running: tuple[Client, Runtime, Settings], receiver: tuple[Receiver, str]) -> None:
    api, _, settings = running
    got, url = receiver
    got.refuse = 2
    path = await _create(api, "sunk", hot({"a": {"type": "OS::Heat::TestResource"}}),
                         {"event_sinks": [{"type": "webhook", "target": url, "secret": "k",
                                           "kinds": ["event"]}]})
    await eventually(lambda: _is(api, path, "CREATE_COMPLETE"), timeout=30, what="the create")
    async with api.get(f"{path}/events") as r:
        expected = {e["id"] for e in (await r.json())["events"]}
    async with notifier(settings):
        await eventually(_async(lambda: {b["notice"]["id"] for b in got.bodies()} >= expected or None),
                         timeout=30, what="the first events delivered")
        # Stopped before it records an answer, a notifier sends that delivery again (at least once).
        await eventually(lambda: _all_recorded(api, path), timeout=30, what="the answers recorded")
    first = len(got.got)
    async with api.patch(path, json={"template": hot({"a": {"type": "OS::Heat::TestResource",
                                                            "properties": {"value": "x"}}})}) as r:
        assert r.status == 202
    await eventually(lambda: _is(api, path, "UPDATE_COMPLETE"), timeout=30, what="the update")
    async with notifier(settings):  # a restarted notifier: the update's events, and nothing again
        async with api.get(f"{path}/events") as r:
            expected = {e["id"] for e in (await r.json())["events"]}
        await eventually(_async(lambda: {b["notice"]["id"] for b in got.bodies()} >= expected or None),
                         timeout=30, what="the update's events delivered")
        await eventually(lambda: _all_recorded(api, path), timeout=30, what="the answers recorded")
    ids = [b["notice"]["id"] for b in got.bodies()]
    assert len(ids) == len(set(ids)) and len(got.got) > first
    assert all(_signed(h, b, "k") for h, b in got.got)
    async with api.get(f"{path}/subscriptions") as r:
        [sub] = (await r.json())["subscriptions"]
    assert sub["source"] == "environment" and "secret" not in sub
    async with api.get(f"/v1/demo/subscriptions/{sub['id']}/deliveries?limit=1000") as r:
        deliveries = (await r.json())["deliveries"]
    assert {d["status"] for d in deliveries} == {"delivered"}
    assert sum(d["attempts"] - 1 for d in deliveries) == 2  # each refusal cost one more attempt


async def _all_recorded(api: Client, path: str) -> bool | None:
    """Whether every delivery of the stack's one subscription has its answer recorded."""
    async with api.get(f"{path}/subscriptions") as r:
        [sub] = (await r.json())["subscriptions"]
    async with api.get(f"/v1/demo/subscriptions/{sub['id']}/deliveries?limit=1000") as r:
        deliveries = (await r.json())["deliveries"]
    return all(d["status"] != "pending" for d in deliveries) or None


_ONE = hot({"a": {"type": "OS::Heat::None"}})


def _sink(url: str) -> dict[str, Any]:
    return {"type": "webhook", "target": url, "secret": "k", "kinds": ["event"]}


async def test_a_stack_created_with_event_sinks_has_its_subscription_from_the_start(
        running: tuple[Client, Runtime, Settings], receiver: tuple[Receiver, str]) -> None:
    # No notifier runs: the sink is the stack's subscription as soon as the create commits, so no
    # notice of the stack, however early and however many notifiers handle them at once, misses it.
    api, _, _ = running
    _, url = receiver
    path = await _create(api, "early", _ONE, {"event_sinks": [_sink(url)]})
    async with api.get(f"{path}/subscriptions") as r:
        [sub] = (await r.json())["subscriptions"]
    assert (sub["source"], sub["url"], sub["kinds"]) == ("environment", url, ["event"])
    # An update whose environment drops the sink ends it in the same commit.
    async with api.put(path, json={"template": _ONE, "environment": {}}) as r:
        assert r.status == 202
    async with api.get(f"{path}/subscriptions") as r:
        assert (await r.json())["subscriptions"] == []


async def test_event_sinks_get_every_notice_of_many_stacks_made_at_once(
        running: tuple[Client, Runtime, Settings], receiver: tuple[Receiver, str]) -> None:
    api, _, settings = running
    got, url = receiver
    template = hot({f"r{i}": {"type": "OS::Heat::None"} for i in range(3)})
    async with notifier(settings):  # running while the stacks are made, as in the 2 of 402
        paths = await asyncio.gather(*(_create(api, f"sunk{i}", template, {"event_sinks": [_sink(url)]})
                                       for i in range(20)))
        for path in paths:
            await eventually(functools.partial(_is, api, path, "CREATE_COMPLETE"), timeout=60,
                             what="the creates")
        expected: set[str] = set()
        for path in paths:
            async with api.get(f"{path}/events") as r:
                expected |= {e["id"] for e in (await r.json())["events"]}
        assert len(expected) == 20 * 8  # the stack's start and end, each resource's two
        await eventually(_async(lambda: {b["notice"]["id"] for b in got.bodies()} >= expected or None),
                         timeout=60, what="every event of every stack at its sink")
    ids = [b["notice"]["id"] for b in got.bodies()]
    assert len(ids) == len(set(ids))  # and none twice


async def test_a_notifier_starting_follows_sinks_of_stacks_made_before_they_were_committed(
        running: tuple[Client, Runtime, Settings], receiver: tuple[Receiver, str]) -> None:
    api, rt, settings = running
    _, url = receiver
    path = await _create(api, "older", _ONE, {"event_sinks": [_sink(url)]})
    async with rt.pool.acquire() as conn:  # as a stack made by an Ember that made sinks lazily
        await conn.execute("DELETE FROM subscriptions WHERE source = 'environment'")
    async with notifier(settings), api.get(f"{path}/subscriptions") as r:
        [sub] = (await r.json())["subscriptions"]
    assert (sub["source"], sub["url"]) == ("environment", url)
