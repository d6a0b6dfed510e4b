"""The pull consumer against a real JetStream: outcomes, redelivery, drain, traces."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from typing import ClassVar

import pytest
from nats.js.api import ConsumerInfo
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from libs.errors import GIVE_UP_AFTER, Permanent, Retry
from libs.messaging.bus import Bus
from libs.messaging.consumer import Consumer, Delivery
from libs.messaging.payloads import Payload
from libs.messaging.subjects import Names
from tests.support import Servers, eventually


@dataclasses.dataclass(frozen=True)
class Job(Payload):
    kind: ClassVar[str] = "test_job"
    name: str


@contextlib.asynccontextmanager
async def bus_for(servers: Servers, prefix: str, service: str,
                  exporter: InMemorySpanExporter | None = None) -> AsyncIterator[Bus]:
    provider = TracerProvider()
    if exporter is not None:
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    async with Bus.connect(servers.nats_url, Names(prefix), provider.get_tracer(service),
                           client_name=f"test-{service}") as bus:
        await bus.ensure_topology()
        yield bus


class Recorder:
    def __init__(self, behaviour: dict[str, list[BaseException | None]]) -> None:
        self.behaviour = behaviour
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, payload: Payload, delivery: Delivery) -> None:
        assert isinstance(payload, Job)
        self.calls.append((payload.name, delivery.num_delivered))
        plan = self.behaviour.get(payload.name, [])
        error = plan.pop(0) if plan else None
        if error is not None:
            raise error

    def deliveries(self, name: str) -> list[int]:
        return [n for job, n in self.calls if job == name]


async def test_each_error_type_decides_the_fate_of_the_message(servers: Servers, nats_prefix: str) -> None:
    recorder = Recorder({
        "flaky": [RuntimeError("db blip")],
        "waiting": [Retry(0.3, "not ready"), Retry(0.3, "not ready")],
        "doomed": [Permanent("stale traversal")],
    })
    async with bus_for(servers, nats_prefix, "worker") as bus:
        consumer = Consumer(bus, bus.names.workers, recorder, concurrency=4, logger_name="test")
        await consumer.start()
        try:
            for name in ("ok", "flaky", "waiting", "doomed"):
                await bus.publish(bus.names.work(name), Job(name=name))
            await eventually(lambda: _async(recorder.deliveries("waiting") == [1, 2, 3]),
                             what="waiting to run three times")
            await eventually(lambda: _async(recorder.deliveries("flaky") == [1, 2]),
                             what="flaky to be redelivered once")
            assert recorder.deliveries("ok") == [1]
            assert recorder.deliveries("doomed") == [1]
            # Acked and terminated messages leave the work queue: nothing is pending.
            info = await eventually(lambda: _pending_zero(bus), what="an empty queue")
            assert info.num_ack_pending == 0
        finally:
            await consumer.stop(grace=1.0)
    assert recorder.deliveries("doomed") == [1]


async def _async(value: bool) -> bool:
    return value


async def _pending_zero(bus: Bus) -> ConsumerInfo | None:
    info = await bus.js.consumer_info(bus.names.workers.stream, bus.names.workers.durable)
    return info if info.num_pending == 0 and info.num_ack_pending == 0 else None


async def test_duplicate_message_ids_are_dropped_by_jetstream(servers: Servers, nats_prefix: str) -> None:
    recorder = Recorder({})
    async with bus_for(servers, nats_prefix, "worker") as bus:
        for _ in range(3):
            await bus.publish(bus.names.work("s"), Job(name="once"), msg_id="s:t:node")
        consumer = Consumer(bus, bus.names.workers, recorder, concurrency=2, logger_name="test")
        await consumer.start()
        try:
            await eventually(lambda: _async(recorder.deliveries("once") == [1]), what="one delivery")
            await eventually(lambda: _pending_zero(bus), what="an empty queue")
        finally:
            await consumer.stop(grace=1.0)
    assert recorder.deliveries("once") == [1]


async def test_stop_hands_back_what_outlives_the_grace_period(servers: Servers, nats_prefix: str) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow(payload: Payload, delivery: Delivery) -> None:
        started.set()
        await release.wait()

    recorder = Recorder({})
    async with bus_for(servers, nats_prefix, "worker-a") as bus_a, \
            bus_for(servers, nats_prefix, "worker-b") as bus_b:
        first = Consumer(bus_a, bus_a.names.workers, slow, concurrency=1, logger_name="test")
        await first.start()
        await bus_a.publish(bus_a.names.work("s"), Job(name="long"))
        await asyncio.wait_for(started.wait(), 20)
        began = time.monotonic()
        await first.stop(grace=0.2)
        # Handed back with nak(0), not left to the 30 s ack wait.
        second = Consumer(bus_b, bus_b.names.workers, recorder, concurrency=1, logger_name="test")
        await second.start()
        try:
            await eventually(lambda: _async(recorder.deliveries("long") == [2]), timeout=10,
                             what="the second process to take the message")
            assert time.monotonic() - began < 10
        finally:
            await second.stop(grace=1.0)


async def test_trace_context_crosses_the_queue(servers: Servers, nats_prefix: str) -> None:
    producer_spans = InMemorySpanExporter()
    consumer_spans = InMemorySpanExporter()
    recorder = Recorder({})
    async with bus_for(servers, nats_prefix, "api", producer_spans) as api, \
            bus_for(servers, nats_prefix, "worker", consumer_spans) as worker:
        consumer = Consumer(worker, worker.names.workers, recorder, concurrency=1, logger_name="test")
        await consumer.start()
        try:
            with api.tracer.start_as_current_span("POST /stacks") as root:
                await api.publish(api.names.work("s"), Job(name="traced"))
            await eventually(lambda: _async(bool(consumer_spans.get_finished_spans())), what="a span")
        finally:
            await consumer.stop(grace=1.0)
    (consumed,) = consumer_spans.get_finished_spans()
    published = next(s for s in producer_spans.get_finished_spans() if s.name.startswith("publish"))
    assert consumed.name == "consume test_job"
    assert consumed.context.trace_id == root.get_span_context().trace_id
    assert consumed.parent is not None and consumed.parent.span_id == published.context.span_id


@pytest.mark.parametrize("concurrency", [1, 8])
async def test_many_messages_are_each_acked_once(servers: Servers, nats_prefix: str,
                                                 concurrency: int) -> None:
    recorder = Recorder({})
    async with bus_for(servers, nats_prefix, "worker") as bus:
        await asyncio.gather(*(bus.publish(bus.names.work(f"s{i}"), Job(name=f"j{i}")) for i in range(200)))
        consumer = Consumer(bus, bus.names.workers, recorder, concurrency=concurrency, logger_name="test")
        await consumer.start()
        try:
            await eventually(lambda: _async(len(recorder.calls) >= 200), what="200 deliveries")
            await eventually(lambda: _pending_zero(bus), what="an empty queue")
        finally:
            await consumer.stop(grace=1.0)
    assert sorted(name for name, _ in recorder.calls) == sorted(f"j{i}" for i in range(200))


async def test_an_error_that_repeats_is_given_up_on_and_a_wait_never_is(servers: Servers,
                                                                         nats_prefix: str) -> None:
    # (That the database or NATS away is waited out however long: tests/unit/test_outcomes.py.)
    waits = [Retry(0.01, "booting")] * 8
    recorder = Recorder({
        # Many waits first: they must not count, so it fails GIVE_UP_AFTER times before the end.
        "broken": [*waits, *[KeyError("foo.yaml")] * 20],
        "waiting": [Retry(0.01, "booting")] * 12,
    })
    given_up: list[tuple[str, str]] = []

    async def give_up(payload: Payload, error: BaseException) -> None:
        assert isinstance(payload, Job)
        given_up.append((payload.name, repr(error)))

    async with bus_for(servers, nats_prefix, "worker") as bus:
        consumer = Consumer(bus, bus.names.workers, recorder, concurrency=4, logger_name="test",
                            give_up=give_up)
        await consumer.start()
        try:
            for name in ("broken", "waiting"):
                await bus.publish(bus.names.work(name), Job(name=name))
            await eventually(lambda: _pending_zero(bus), timeout=60, what="every message settled")
        finally:
            await consumer.stop(grace=1.0)
    assert given_up == [("broken", "KeyError('foo.yaml')")]
    assert len(recorder.deliveries("broken")) == 8 + GIVE_UP_AFTER
    assert len(recorder.deliveries("waiting")) == 13


async def test_a_consumer_whose_durable_is_gone_creates_it_again(servers: Servers, nats_prefix: str) -> None:
    # A nats-server that comes back without its store has no consumers: fetching must resume anyway.
    recorder = Recorder({})
    async with bus_for(servers, nats_prefix, "worker") as bus:
        consumer = Consumer(bus, bus.names.workers, recorder, concurrency=2, logger_name="test")
        await consumer.start()
        try:
            await bus.publish(bus.names.work("before"), Job(name="before"))
            await eventually(lambda: _async(recorder.deliveries("before") == [1]), what="the first job")
            await bus.js.delete_consumer(bus.names.workers.stream, bus.names.workers.durable)
            await bus.publish(bus.names.work("after"), Job(name="after"))
            await eventually(lambda: _async(recorder.deliveries("after") == [1]), timeout=20,
                             what="the job published after the consumer was lost")
        finally:
            await consumer.stop(1.0)
