"""The five services as real processes: Heat's root document, health, one trace, clean stops."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from libs.db import services
from libs.embedded.nats import EmbeddedNats
from libs.embedded.postgres import EmbeddedPostgres
from libs.embedded.process import free_port
from libs.messaging.subjects import SERVICES
from tests.support import Servers, ember, eventually, terminate

pytestmark = pytest.mark.slow


async def _health(http: aiohttp.ClientSession, url: str) -> dict[str, Any] | None:
    try:
        async with http.get(url + "/ember/v1/health") as response:
            body: dict[str, Any] = await response.json()
            return body if response.status == 200 else None
    except aiohttp.ClientError:
        return None


def _spans(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_services_answer_trace_and_stop_cleanly(ember_env: dict[str, str], database_url: str,
                                                      tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    port = free_port()
    env = {**ember_env, "EMBER_API_BIND": f"127.0.0.1:{port}", "EMBER_OTEL_EXPORTER": "file",
           "EMBER_OTEL_FILE": str(spans_file)}
    url = f"http://127.0.0.1:{port}"
    procs = {svc: ember([svc], env, tmp_path / f"{svc}.log") for svc in SERVICES}
    try:
        async with aiohttp.ClientSession() as http:
            health = await eventually(lambda: _health(http, url), timeout=60, interval=0.2,
                                      what="every service live and every queue answering")
            assert health["status"] == "ok"
            assert {s: len(v) for s, v in health["services"].items()} == dict.fromkeys(SERVICES, 1)
            answered = {q: r["answered_by"]["service"] for q, r in health["queues"].items()}
            assert answered == {"plan": "planner", "work": "worker", "events": "notifier"}

            async with http.get(url + "/") as response:
                assert response.status == 300
                assert await response.json() == {"versions": [{
                    "id": "v1.0", "status": "CURRENT",
                    "links": [{"rel": "self", "href": f"{url}/v1/"}]}]}
            async with http.post(url + "/") as response:
                assert response.status == 405
                fault = await response.json()
                assert fault["code"] == 405 and fault["error"]["type"] == "HTTPMethodNotAllowed"
            async with http.get(url + "/no/such/thing") as response:
                assert response.status == 404
                fault = await response.json()
                assert set(fault) == {"code", "title", "explanation", "error"}
                assert fault["title"] == "Not Found"

        # One trace: the api's request span, its publish, and the worker's consumer span under it.
        def linked() -> dict[str, Any] | None:
            spans = _spans(spans_file)
            by_id = {s["span_id"]: s for s in spans}
            for span in spans:
                if span["service"] == "ember-worker" and span["name"] == "consume probe":
                    chain = [span]
                    while chain[-1]["parent_span_id"] in by_id:
                        chain.append(by_id[chain[-1]["parent_span_id"]])
                    if chain[-1]["name"] == "GET /ember/v1/health":
                        return {"chain": chain}
            return None

        found = await eventually(_async(linked), timeout=10, what="a linked api -> worker trace")
        chain = found["chain"]
        assert [s["service"] for s in chain] == ["ember-worker", "ember-api", "ember-api"]
        assert chain[1]["name"] == "publish probe" and chain[1]["kind"] == "PRODUCER"
        assert len({s["trace_id"] for s in chain}) == 1
    finally:
        codes = {svc: terminate(proc) for svc, proc in procs.items()}
    assert codes == dict.fromkeys(SERVICES, 0), {s: (tmp_path / f"{s}.log").read_text()[-2000:]
                                                  for s, c in codes.items() if c}
    conn = await asyncpg.connect(database_url)
    try:
        rows = await services.list_all(conn, include_deleted=True)
        assert sorted(r.service for r in rows) == sorted(SERVICES)
        assert all(r.deleted_at is not None for r in rows), "every service retires its row on SIGTERM"
    finally:
        await conn.close()


def _async(fn: Any) -> Any:
    async def call() -> Any:
        return fn()
    return call


async def test_spans_reach_an_otlp_collector(ember_env: dict[str, str], tmp_path: Path) -> None:
    """EMBER_OTLP_ENDPOINT alone sends spans over OTLP/HTTP, flushed when the service stops."""
    from aiohttp import web
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[tuple[str, str]] = []

    async def collect(request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        for resource_spans in export.resource_spans:
            attrs = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                received.extend((attrs["service.name"], span.name) for span in scope.spans)
        return web.Response(status=200, body=b"", content_type="application/x-protobuf")

    collector = web.Application()
    collector.router.add_post("/v1/traces", collect)
    runner = web.AppRunner(collector)
    await runner.setup()
    collector_port = free_port()
    await web.TCPSite(runner, "127.0.0.1", collector_port).start()
    api_port = free_port()
    env = {**ember_env, "EMBER_API_BIND": f"127.0.0.1:{api_port}",
           "EMBER_OTLP_ENDPOINT": f"http://127.0.0.1:{collector_port}"}
    api = ember(["api"], env, tmp_path / "api.log")
    try:
        async with aiohttp.ClientSession() as http:
            async def root_answers() -> bool:
                try:
                    async with http.get(f"http://127.0.0.1:{api_port}/") as response:
                        return response.status == 300
                except aiohttp.ClientError:
                    return False
            await eventually(root_answers, timeout=60, interval=0.2, what="the api")
        # In a thread: the collector answering the final flush runs on this loop.
        assert await asyncio.to_thread(terminate, api) == 0
        await eventually(_async(lambda: ("ember-api", "GET /") in received), timeout=10,
                         what="the request span at the collector")
    finally:
        await asyncio.to_thread(terminate, api)
        await runner.cleanup()




async def test_a_service_whose_servers_are_gone_still_stops_on_sigterm(
        servers: Servers, nats_prefix: str, tmp_path: Path) -> None:
    """`ember dev` killed as a whole takes PostgreSQL and NATS with it while its services run:
    their SIGTERM must end them within their grace and a margin, not leave them waiting for ever."""
    base = servers.scratch / f"gone-{nats_prefix}"
    postgres, nats_server = EmbeddedPostgres(base / "postgres", fsync=False), EmbeddedNats(base / "nats")
    env = {"EMBER_DATABASE_URL": postgres.start(), "EMBER_NATS_URL": nats_server.start(),
           "EMBER_NATS_PREFIX": nats_prefix, "EMBER_SHUTDOWN_GRACE": "2", "EMBER_LOG_LEVEL": "DEBUG"}
    log = tmp_path / "notifier.log"
    proc = ember(["notifier"], env, log)
    try:
        await eventually(_async(lambda: "notifier ready" in log.read_text() or None), timeout=60,
                         what="the notifier ready")
    finally:
        nats_server.stop()
        postgres.stop()
    await eventually(_async(lambda: "nats disconnected" in log.read_text() or None), timeout=30,
                     what="the notifier seeing NATS gone")
    code = await asyncio.to_thread(terminate, proc, 30.0)
    assert code == 0, log.read_text()[-2000:]
    assert "notifier stopping" in log.read_text()
