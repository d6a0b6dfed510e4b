"""The compose topology on one machine: a 3-node JetStream cluster and two worker processes.

Streams are replicated on all three nodes; the two workers, connected to
different nodes, share the work queue; every probe is answered exactly once,
also after a node goes down.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import asyncpg
import nats
import pytest
from nats.aio.msg import Msg
from opentelemetry.sdk.trace import TracerProvider

from libs.db import services
from libs.embedded.nats import EmbeddedNats, start_cluster, stop_all
from libs.messaging.bus import Bus
from libs.messaging.payloads import Probe, ProbeReply, decode
from libs.messaging.subjects import Names
from tests.support import ember, eventually, scratch, terminate

# Process-heavy (a three-node NATS cluster and services): run by .ci/run, not ./test.sh.
pytestmark = [pytest.mark.slow, pytest.mark.slow_ci]


@pytest.fixture
def cluster() -> Iterator[list[EmbeddedNats]]:
    with scratch("ember-cluster-") as base:
        nodes = start_cluster(base, 3)
        try:
            yield nodes
        finally:
            stop_all(nodes)


@pytest.fixture
async def prober(cluster: list[EmbeddedNats], nats_prefix: str) -> AsyncIterator[Bus]:
    tracer = TracerProvider().get_tracer("test")
    # The test talks through node 3 only; the workers use nodes 1 and 2.
    async with Bus.connect(cluster[2].url, Names(nats_prefix), tracer, client_name="prober",
                           replicas=3) as bus:
        yield bus


async def _probe(bus: Bus, replies: list[ProbeReply]) -> None:
    """Send one probe through the work queue; record every reply it gets within a second."""
    inbox = bus.nc.new_inbox()
    first = asyncio.Event()

    async def on_reply(msg: Msg) -> None:
        reply = decode(msg.data)
        assert isinstance(reply, ProbeReply)
        replies.append(reply)
        first.set()

    sub = await bus.nc.subscribe(inbox, cb=on_reply)
    try:
        probe_id = uuid.uuid4().hex
        await bus.publish(bus.names.work_probe, Probe(probe_id=probe_id, reply_to=inbox,
                                                      expires_at=time.time() + 30),
                          msg_id=probe_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(first.wait(), 10)
        # Room for a wrong second answer to arrive; the assertion is that none does.
        await asyncio.sleep(0.3)
    finally:
        await sub.unsubscribe()


async def test_two_workers_share_a_replicated_queue(cluster: list[EmbeddedNats], prober: Bus,
                                                    ember_env: dict[str, str], database_url: str,
                                                    tmp_path: Path) -> None:
    workers = []
    for i, node in enumerate(cluster[:2]):
        env = {**ember_env, "EMBER_NATS_URL": node.url, "EMBER_NATS_REPLICAS": "3",
               "EMBER_WORKER_CONCURRENCY": "1"}
        workers.append(ember(["worker"], env, tmp_path / f"worker-{i}.log"))
    try:
        conn = await asyncpg.connect(database_url)
        try:
            async def both_registered() -> list[str] | None:
                rows = [r for r in await services.list_all(conn) if r.service == "worker"]
                return [str(r.id) for r in rows] if len(rows) == 2 else None
            worker_ids = set(await eventually(both_registered, timeout=60, what="two workers"))
        finally:
            await conn.close()

        info = await prober.js.stream_info(prober.names.work_stream.name)
        assert info.config.num_replicas == 3
        assert info.cluster is not None and len(info.cluster.replicas or []) == 2

        answered_by: set[str] = set()
        async def probe_until_both_answer() -> bool:
            replies: list[ProbeReply] = []
            await _probe(prober, replies)
            # A registered worker may not be pulling yet (its heartbeat row comes first, its
            # consumer after): no answer means "not yet"; two answers would be the bug.
            assert len(replies) <= 1, f"a probe must be handled at most once, got {replies}"
            answered_by.update(r.service_id for r in replies)
            return answered_by == worker_ids
        await eventually(probe_until_both_answer, timeout=60, interval=0,
                         what="probes answered by both workers")

        # Lose node 1: worker 0 reconnects to a node the cluster told it about,
        # the stream keeps its quorum, and the queue still flows through both.
        cluster[0].stop()
        answered_by.clear()
        async def probe_after_node_loss() -> bool:
            replies: list[ProbeReply] = []
            try:
                await _probe(prober, replies)
            except (nats.errors.TimeoutError, nats.js.errors.NoStreamResponseError):
                return False  # a stream leader election in progress
            assert len(replies) <= 1, f"a probe must be handled at most once, got {replies}"
            answered_by.update(r.service_id for r in replies)
            return answered_by == worker_ids
        await eventually(probe_after_node_loss, timeout=90, interval=0,
                         what="both workers answering after a node went down")
    finally:
        codes = [terminate(w) for w in workers]
    assert codes == [0, 0]
