"""The openstacksdk caller against the simulated OpenStack, over real HTTP with the real openstacksdk."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from libs.cloud.caller import CloudTarget
from libs.cloud.calls import Answer, CloudCall, ErrorKind, Service
from libs.cloud.sdk import SdkCaller
from tests.integration.cloud_support import Sim, simulated_cloud

SIM = CloudTarget("simcloud")


@pytest.fixture
async def sim(database_url: str, tmp_path: Path) -> AsyncIterator[Sim]:
    async with simulated_cloud(database_url, tmp_path) as running:
        yield running


def _fault(**spec: object) -> dict[str, object]:
    """A chaos fault on the simulated Keystone's GETs (authentication is a POST: it still works)."""
    return {"service": "identity", "method": "GET", **spec}


def _projects(key: str = "projects") -> CloudCall:
    return CloudCall(key, Service.IDENTITY, "projects")


async def test_answers_are_json_and_one_connection_serves_every_call(sim: Sim) -> None:
    caller = SdkCaller(sim.settings())
    try:
        answers = await caller.call(SIM, [
            _projects(),
            CloudCall("missing", Service.IDENTITY, "get_project", ("no-such-project",)),
            CloudCall("nothing", Service.IDENTITY, "find_project", ("no-such-project",),
                      {"ignore_missing": True}),
        ])
        assert answers["projects"].ok
        assert [p["name"] for p in answers["projects"].value] == ["demo"]
        json.dumps(answers["projects"].value)
        missing = answers["missing"].error
        assert missing is not None and missing.kind is ErrorKind.NOT_FOUND and missing.status == 404
        assert missing.exception == "NotFoundException"
        assert answers["nothing"] == Answer(None)
        for _ in range(3):
            batch = await asyncio.gather(*(caller.call(SIM, [_projects(f"p{i}")]) for i in range(8)))
            assert all(answer.ok for answers in batch for answer in answers.values())
        assert caller.connections_made == 1
        other = await caller.call(CloudTarget("simcloud-admin"), [_projects()])
        assert {p["name"] for p in other["projects"].value} == {"admin", "demo"}
        assert caller.connections_made == 2
        # The same entry scoped to another of its projects is a target (and a connection) of its own.
        scoped = CloudTarget("simcloud-admin", "demo")
        assert (await caller.call(scoped, [_projects()]))["projects"].ok
        assert caller.connections_made == 3
        projects = {p["name"]: p["id"] for p in other["projects"].value}
        assert caller._clouds[scoped].connection.current_project_id == projects["demo"]
        admin = caller._clouds[CloudTarget("simcloud-admin")].connection
        assert admin.current_project_id == projects["admin"]
    finally:
        await caller.close()


async def _warm(caller: SdkCaller, target: CloudTarget = SIM) -> None:
    """Authenticate and discover first, so faults on later GETs hit only the calls under test."""
    assert (await caller.call(target, [_projects()]))["projects"].ok


async def test_a_lookup_many_ask_for_at_once_is_sent_once(sim: Sim) -> None:
    caller = SdkCaller(sim.settings())

    def flavor(key: str) -> CloudCall:
        return CloudCall(key, Service.COMPUTE, "find_flavor", ("m1.tiny",), {"ignore_missing": False})
    try:
        await _warm(caller)
        together = await asyncio.gather(*(caller.call(SIM, [flavor(f"f{i}")]) for i in range(20)))
        assert [answers[f"f{i}"].value["name"] for i, answers in enumerate(together)] == ["m1.tiny"] * 20
        assert caller.calls_made["compute.find_flavor"] == 1
        # Nothing is kept once it is answered: the next one is sent.
        assert (await caller.call(SIM, [flavor("later")]))["later"].value["name"] == "m1.tiny"
        assert caller.calls_made["compute.find_flavor"] == 2
        # Other lookups, and anything but a lookup, are sent each time.
        other = CloudCall("small", Service.COMPUTE, "find_flavor", ("m1.small",), {"ignore_missing": False})
        listings = [_projects(f"p{i}") for i in range(3)]
        answers = await caller.call(SIM, [flavor("again"), other, *listings])
        assert answers["small"].value["name"] == "m1.small" and answers["again"].value["name"] == "m1.tiny"
        assert caller.calls_made["compute.find_flavor"] == 4
        assert caller.calls_made["identity.projects"] == 1 + 3
    finally:
        await caller.close()


async def test_server_errors_are_tried_again_then_handed_back(sim: Sim, caplog: pytest.LogCaptureFixture
                                                              ) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    caller = SdkCaller(sim.settings(retries=3), provider.get_tracer("test"))
    try:
        await _warm(caller)
        await sim.chaos("POST", "/faults", _fault(status=503, count=2))
        with caplog.at_level(logging.WARNING, logger="ember.cloud"):
            recovered = await caller.call(SIM, [_projects()])
        assert recovered["projects"].ok
        retries = [r for r in caplog.records if r.name == "ember.cloud"]
        assert len(retries) == 2 and "identity.projects" in retries[0].getMessage()

        await sim.chaos("POST", "/faults", _fault(status=503, count=10))
        failed = (await caller.call(SIM, [_projects()]))["projects"].error
        assert failed is not None and failed.kind is ErrorKind.SERVER and failed.status == 503
        assert "Simulated failure" in failed.message
        await sim.chaos("DELETE", "/faults")

        # A refusal that is not retried comes back at once.
        await sim.chaos("POST", "/faults", _fault(status=409, count=5))
        conflict = (await caller.call(SIM, [_projects()]))["projects"].error
        assert conflict is not None and conflict.kind is ErrorKind.CONFLICT
        remaining = (await sim.chaos("GET", "/faults"))["faults"][0]["remaining"]
        assert remaining == 4
        assert caller.calls_made["identity.projects"] == 1 + 3 + 4 + 1
    finally:
        await caller.close()
    spans = [s for s in exporter.get_finished_spans() if s.name == "identity.projects"]
    attempts = [(s.attributes or {}).get("cloud.attempts") for s in spans]
    assert attempts == [1, 3, 4, 1]
    assert (spans[2].attributes or {}).get("cloud.error.kind") == "server"


async def test_slow_calls_leave_the_event_loop_free_and_the_pool_bounded(sim: Sim) -> None:
    caller = SdkCaller(sim.settings(threads=2))
    try:
        await _warm(caller)
        await sim.chaos("POST", "/faults", _fault(delay=1.5, count=4))
        slow = [asyncio.create_task(caller.call(SIM, [_projects()])) for _ in range(4)]
        # While the cloud is slow, the loop still serves other work (here: other HTTP requests).
        for _ in range(5):
            await sim.chaos("GET", "/faults")
        assert not any(task.done() for task in slow)
        answers = await asyncio.gather(*slow)
        assert all(a["projects"].ok for a in answers)
        assert caller.peak_in_flight == 2
        assert caller.connections_made == 1
    finally:
        await caller.close()


async def test_an_unreachable_cloud_is_an_answer(sim: Sim, tmp_path: Path) -> None:
    clouds = yaml.safe_load(sim.clouds_yaml.read_text())
    clouds["clouds"]["down"] = {**clouds["clouds"]["simcloud"],
                                "auth": {**clouds["clouds"]["simcloud"]["auth"],
                                         "auth_url": "http://127.0.0.1:9/identity"}}
    clouds_yaml = tmp_path / "more-clouds.yaml"
    clouds_yaml.write_text(yaml.safe_dump(clouds))
    caller = SdkCaller(sim.settings(config_file=clouds_yaml, retries=1))
    try:
        answer = (await caller.call(CloudTarget("down"), [_projects()]))["projects"]
        assert answer.error is not None and answer.error.kind is ErrorKind.UNREACHABLE
        unknown = (await caller.call(CloudTarget("no-such-cloud"), [_projects()]))["projects"]
        assert unknown.error is not None and unknown.error.kind is ErrorKind.BAD_REQUEST
        assert "no-such-cloud" in unknown.error.message
    finally:
        await caller.close()


async def test_credentials_appear_in_no_log_span_or_answer(sim: Sim, tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture) -> None:
    clouds = yaml.safe_load(sim.clouds_yaml.read_text())
    wrong = "wrong-" + sim.password
    clouds["clouds"]["badpass"] = {**clouds["clouds"]["simcloud"],
                                   "auth": {**clouds["clouds"]["simcloud"]["auth"], "password": wrong}}
    clouds["clouds"]["down"] = {**clouds["clouds"]["simcloud"],
                                "auth": {**clouds["clouds"]["simcloud"]["auth"],
                                         "auth_url": "http://127.0.0.1:9/identity"}}
    clouds_yaml = tmp_path / "more-clouds.yaml"
    clouds_yaml.write_text(yaml.safe_dump(clouds))
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    caller = SdkCaller(sim.settings(config_file=clouds_yaml, retries=1), provider.get_tracer("test"))
    answers: list[dict[str, Answer]] = []
    try:
        with caplog.at_level(logging.DEBUG):  # every library's debug lines too (keystoneauth's requests)
            answers.append(await caller.call(SIM, [
                _projects(), CloudCall("missing", Service.IDENTITY, "get_project", ("nope",)),
                CloudCall("bad", Service.IDENTITY, "no_such_method"),
                CloudCall("private", Service.IDENTITY, "_get_resource")]))
            await sim.chaos("POST", "/faults", _fault(status=500, count=2))
            answers.append(await caller.call(SIM, [_projects()]))
            answers.append(await caller.call(CloudTarget("badpass"), [_projects()]))
            answers.append(await caller.call(CloudTarget("down"), [_projects()]))
            token = caller._clouds[SIM].token()
    finally:
        await caller.close()
    assert token, "the connection authenticated, so there is a token to look for"
    refused = answers[2]["projects"].error
    assert refused is not None and refused.kind is ErrorKind.FORBIDDEN
    assert answers[0]["bad"].error is not None and answers[0]["private"].error is not None
    logged = caplog.text + "".join(repr(r.args) for r in caplog.records)
    traced = "".join(f"{s.name}{dict(s.attributes or {})}{s.events}{s.status}"
                     for s in exporter.get_finished_spans())
    answered = json.dumps([{k: (a.value, a.error and a.error.__dict__) for k, a in batch.items()}
                           for batch in answers], default=str)
    assert "identity.projects" in traced and "Simulated failure" in answered
    assert "REQ: curl" in logged and "X-Auth-Token" in logged  # the requests were logged, headers and all
    for secret in (sim.password, wrong, token):
        assert secret not in logged
        assert secret not in traced
        assert secret not in answered




async def test_listings_come_back_with_every_page(sim: Sim) -> None:
    caller = SdkCaller(sim.settings())
    try:
        answers = await caller.call(SIM, [
            CloudCall("paged", Service.COMPUTE, "flavors", kwargs={"limit": 1}),
            CloudCall("whole", Service.COMPUTE, "flavors"),
            CloudCall("tiny", Service.COMPUTE, "find_flavor", ("m1.tiny",), {"ignore_missing": False}),
            CloudCall("huge", Service.COMPUTE, "find_flavor", ("m1.huge",), {"ignore_missing": False}),
            CloudCall("images", Service.IMAGE, "images", kwargs={"name": "cirros"}),
        ])
    finally:
        await caller.close()
    whole = sorted(f["name"] for f in answers["whole"].value)
    assert {"m1.tiny", "m1.small"} <= set(whole)
    assert sorted(f["name"] for f in answers["paged"].value) == whole
    assert answers["tiny"].value["name"] == "m1.tiny" and answers["tiny"].value["vcpus"] >= 1
    huge = answers["huge"].error
    assert huge is not None and huge.kind is ErrorKind.NOT_FOUND
    assert [i["name"] for i in answers["images"].value] == ["cirros"]


async def test_a_call_that_makes_something_is_sent_again_only_when_nothing_was_made(sim: Sim) -> None:
    caller = SdkCaller(sim.settings(retries=3))
    try:
        await _warm(caller)
        post = {"service": "compute", "method": "POST"}
        await sim.chaos("POST", "/faults", {**post, "status": 500, "count": 3})
        failed = (await caller.call(SIM, [CloudCall("k", Service.COMPUTE, "create_keypair",
                                                    kwargs={"name": "k1"})]))["k"].error
        assert failed is not None and failed.kind is ErrorKind.SERVER
        assert (await sim.chaos("GET", "/faults"))["faults"][0]["remaining"] == 2  # sent once
        await sim.chaos("DELETE", "/faults")
        await sim.chaos("POST", "/faults", {**post, "status": 503, "count": 2})
        made = (await caller.call(SIM, [CloudCall("k", Service.COMPUTE, "create_keypair",
                                                  kwargs={"name": "k1"})]))["k"]
        assert made.ok and made.value["name"] == "k1"
    finally:
        await caller.close()


async def test_every_thread_keeps_its_http_connection(sim: Sim, caplog: pytest.LogCaptureFixture) -> None:
    """More threads than urllib3's default pool (10): no connection is thrown away after use."""
    caller = SdkCaller(sim.settings(threads=12))
    try:
        await _warm(caller)
        await sim.chaos("POST", "/faults", _fault(delay=0.5, count=12))
        with caplog.at_level(logging.WARNING):
            for _ in range(2):
                answers = await asyncio.gather(*(caller.call(SIM, [_projects()]) for _ in range(12)))
                assert all(a["projects"].ok for a in answers)
        assert caller.peak_in_flight == 12
        assert "Connection pool is full" not in caplog.text
    finally:
        await caller.close()
