"""One trace per stack operation, read back from the file exporter.

The api, planner, worker and notifier run in this process with
``EMBER_OTEL_EXPORTER=file``. Two stacks are created at once, each under a
trace the test chose (its ``traceparent``); the worker starts only once both
first waves are queued, so its batches hold items of both operations. Then
every span of the first operation (the api request, the plan, every step of its
nodes, its hook and its clearing, its events' notices and webhook deliveries)
must be in the first trace, as one tree under the request, and none of the
second's; the webhook receiver gets each operation's ``traceparent`` and
``tracestate``; and the worker's line for each item carries that item's ids.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.runtime import Runtime, open_runtime
from libs.telemetry.logs import JsonFormatter
from services.api.app import make_app
from services.notifier.main import body as notifier_body
from services.planner.main import body as planner_body
from services.worker.main import body as worker_body
from tests.integration.engine_support import hot
from tests.integration.webhooks import receiving
from tests.support import eventually

Client = TestClient[web.Request, web.Application]
Span = dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Caller:
    """A client's span: the remote parent of the api request it makes."""

    trace_id: str
    span_id: str
    state: str

    @classmethod
    def new(cls, state: str) -> Caller:
        return cls(secrets.token_hex(16), secrets.token_hex(8), state)

    def headers(self) -> dict[str, str]:
        return {"traceparent": f"00-{self.trace_id}-{self.span_id}-01", "tracestate": self.state}


class Lines(logging.Handler):
    """Log lines as the services write them, formatted when logged (the trace ids are the caller's then)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.setFormatter(JsonFormatter("test", "test"))
        self.got: list[dict[str, Any]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.got.append(json.loads(self.format(record)))


@contextlib.contextmanager
def captured_lines() -> Iterator[Lines]:
    lines = Lines()
    ember = logging.getLogger("ember")
    level = ember.level
    ember.addHandler(lines)
    ember.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        ember.removeHandler(lines)
        ember.setLevel(level)


@contextlib.asynccontextmanager
async def service(settings: Settings, name: str, body: Callable[[Runtime], Any]) -> AsyncIterator[Runtime]:
    async with open_runtime(settings, name) as rt, body(rt):
        yield rt


def _spans(path: Path) -> list[Span]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def _json(api: Client, path: str) -> Any:
    async with api.get(path) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def _create(api: Client, caller: Caller, name: str, template: dict[str, Any],
                  environment: dict[str, Any]) -> tuple[str, str]:
    async with api.post("/v1/demo/stacks", headers=caller.headers(),
                        json={"stack_name": name, "template": template, "environment": environment}) as r:
        assert r.status == 201, await r.text()
        stack_id: str = (await r.json())["stack"]["id"]
    return stack_id, f"/v1/demo/stacks/{name}/{stack_id}"


async def _status(api: Client, path: str, wanted: str) -> bool | None:
    return (await _json(api, path))["stack"]["stack_status"] == wanted or None


def _tree_under(spans: list[Span], caller: Caller) -> list[Span]:
    """The spans of the caller's trace, each checked to hang from the caller's span."""
    mine = [s for s in spans if s["trace_id"] == caller.trace_id]
    by_id = {s["span_id"]: s for s in mine}
    for span in mine:
        seen = span
        while seen["parent_span_id"] != caller.span_id:
            assert seen["parent_span_id"] in by_id, f"{span['name']} is not in the request's tree"
            seen = by_id[seen["parent_span_id"]]
    return mine


@dataclasses.dataclass(frozen=True)
class Run:
    """What two concurrent operations left: spans, webhook deliveries and the worker's log lines."""

    spans: list[Span]
    # Stack id -> the caller whose request made it.
    ops: dict[str, Caller]
    event_ids: dict[str, set[str]]
    got: list[tuple[dict[str, str], dict[str, Any]]]
    lines: list[dict[str, Any]]


# d waits for both b and c, and pauses at a hook first; f, last, ends the stack; e runs on its own.
LAYERED = hot({
    "a": {"type": "OS::Heat::TestResource"},
    "b": {"type": "OS::Heat::TestResource", "depends_on": "a"},
    "c": {"type": "OS::Heat::TestResource", "depends_on": "a"},
    "d": {"type": "OS::Heat::TestResource", "depends_on": ["b", "c"]},
    "e": {"type": "OS::Heat::TestResource"},
    "f": {"type": "OS::Heat::TestResource", "depends_on": "d"},
})
HOOKED = {"resource_registry": {"resources": {"d": {"hooks": "pre-create"}}}}
# The other one fails at its last resource: the stack's end is written in its trace too.
OTHER = hot({"x": {"type": "OS::Heat::TestResource"},
             "y": {"type": "OS::Heat::TestResource", "depends_on": "x"},
             "z": {"type": "OS::Heat::TestResource", "depends_on": "y", "properties": {"fail": True}}})


async def _two_operations(settings: Settings, api_client: Callable[[web.Application], Awaitable[Client]],
                          first: Caller, second: Caller, clearer: Caller) -> Run:
    assert settings.telemetry.file is not None
    async with receiving() as (receiver, url), contextlib.AsyncExitStack() as running:
        await running.enter_async_context(service(settings, "planner", planner_body))
        notifier = await running.enter_async_context(service(settings, "notifier", notifier_body))
        api = await api_client(make_app(settings))
        async with api.post("/v1/demo/subscriptions", json={"url": url, "secret": "k",
                                                             "kinds": ["event", "hook"]}) as r:
            assert r.status == 201, await r.text()
        first_id, first_path = await _create(api, first, "first", LAYERED, HOOKED)
        second_id, second_path = await _create(api, second, "second", OTHER, {})

        async def queued() -> bool | None:
            # The workers' consumer is the worker's own (it is not running yet): count the stream.
            info = await notifier.bus.js.stream_info(notifier.names.workers.stream)
            return info.state.messages == 3 or None  # a and e, and x: one fetch, one batch
        await eventually(queued, timeout=20, what="both first waves queued")

        with captured_lines() as lines:
            await running.enter_async_context(service(settings, "worker", worker_body))

            async def paused() -> bool | None:
                waiting = (await _json(api, f"{first_path}/paused"))["paused"]
                return any(p["resource_name"] == "d" for p in waiting) or None
            await eventually(paused, timeout=30, what="d paused at its hook")
            async with api.post(f"{first_path}/resources/d/signal", headers=clearer.headers(),
                                json={"unset_hook": "pre-create"}) as r:
                assert r.status == 200, await r.text()
            await eventually(lambda: _status(api, first_path, "CREATE_COMPLETE"), timeout=30, what="first")
            await eventually(lambda: _status(api, second_path, "CREATE_FAILED"), timeout=30, what="second")
        event_ids = {stack_id: {e["id"] for e in (await _json(api, f"{path}/events"))["events"]}
                     for stack_id, path in ((first_id, first_path), (second_id, second_path))}

        def delivered() -> bool | None:
            got = receiver.bodies()
            events = {b["notice"]["id"] for b in got if b["kind"] == "event"}
            hooks = sorted(b["notice"]["state"] for b in got if b["kind"] == "hook")
            return (events >= event_ids[first_id] | event_ids[second_id] and hooks == ["cleared", "reached"]
                    ) or None
        await eventually(_async(delivered), timeout=30, what="every event and both hook notices delivered")
        # The api's spans go out in batches on a timer: its shutdown sends what it holds, as the
        # services' do when the stack above closes them (read before it, a span could be missing).
        await api.close()
    return Run(_spans(settings.telemetry.file), {first_id: first, second_id: second}, event_ids,
               receiver.received(), lines.got)


async def test_a_stack_operation_is_one_trace_however_its_items_are_batched(
        settings: Settings, tmp_path: Path, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
) -> None:
    traced = dataclasses.replace(settings, notify_retry_seconds=0.05, telemetry=dataclasses.replace(
        settings.telemetry, exporter="file", file=tmp_path / "spans.jsonl"))
    first, second, clearer = Caller.new("embertest=first"), Caller.new("embertest=second"), Caller.new("x=y")
    run = await _two_operations(traced, aiohttp_client, first, second, clearer)
    for stack_id, caller in run.ops.items():
        _one_tree_per_operation(run, stack_id, caller)

    # Every step of every node of the first stack, its hook's too.
    first_tree = _tree_under(run.spans, first)
    steps = {s["attributes"]["ember.node"] for s in first_tree if s["name"] == "consume work"}
    assert len(steps) == 6, steps
    (release,) = [s for s in first_tree if s["name"] == "release d at pre-create"]
    assert len([s for s in first_tree if s["name"] == "deliver hook"]) == 2  # reached, cleared
    # The clearing request's own trace holds the request alone; the release links to it.
    (signal,) = [s for s in run.spans if s["trace_id"] == clearer.trace_id]
    assert signal["name"].startswith("POST ") and signal["name"].endswith("/signal")
    assert release["links"] == [{"trace_id": clearer.trace_id, "span_id": signal["span_id"]}]

    # Batches held items of both operations; a batch is in no operation's trace but links its items.
    batches = [s for s in run.spans if s["name"] == "step batch"]
    both = {first.trace_id, second.trace_id}
    assert any({link["trace_id"] for link in b["links"]} >= both for b in batches)
    assert not {b["trace_id"] for b in batches} & both

    # The receiver got each delivery in its operation's trace, from the span that sent it.
    deliver_spans = {s["span_id"]: s for s in run.spans if s["name"].startswith("deliver ")}
    for headers, body in run.got:
        caller = run.ops[body["notice"]["stack_id"]]
        _, trace_id, parent_id, _ = headers["traceparent"].split("-")
        assert (trace_id, headers.get("tracestate")) == (caller.trace_id, caller.state)
        assert deliver_spans[parent_id]["trace_id"] == caller.trace_id

    # The worker's line for each item carries that item's stack, traversal, node and trace.
    work_lines = [line for line in run.lines
                  if line["logger"] == "ember.worker" and line.get("kind") == "work"]
    consumed = {s["span_id"]: s for s in run.spans if s["name"] == "consume work"}
    assert {line["stack_id"] for line in work_lines} == set(run.ops)
    for line in work_lines:
        span = consumed[line["span_id"]]
        assert line["trace_id"] == run.ops[line["stack_id"]].trace_id == span["trace_id"]
        assert (line["traversal_id"], line["node"]) == (span["attributes"]["ember.traversal_id"],
                                                         span["attributes"]["ember.node"])


def _one_tree_per_operation(run: Run, stack_id: str, caller: Caller) -> None:
    tree = _tree_under(run.spans, caller)
    about = {s["attributes"].get("ember.stack_id") for s in tree} - {None}
    assert about == {stack_id}, f"another stack's spans in the trace of {caller.state}"
    # Everything about the stack is in its operation's trace.
    stray = [s["name"] for s in run.spans if s["attributes"].get("ember.stack_id") == stack_id
             and s["trace_id"] != caller.trace_id]
    assert not stray, stray
    names = [(s["service"], s["name"]) for s in tree]
    assert names.count(("ember-api", "POST /v1/{project_id}/stacks")) == 1, names
    assert ("ember-planner", "consume plan") in names
    # The notifier publishes each event and queues its deliveries in that event's trace.
    assert ("ember-notifier", "publish event") in names
    published = {s["attributes"]["ember.event_id"] for s in tree if s["name"] == "publish event"}
    assert published == run.event_ids[stack_id]
    delivered = {s["attributes"]["ember.notice"] for s in tree if s["name"] == "deliver event"}
    assert delivered == {f"event:{i}" for i in run.event_ids[stack_id]}


def _async(probe: Callable[[], Any]) -> Callable[[], Awaitable[Any]]:
    async def run() -> Any:
        return probe()
    return run
