"""The openstacksdk caller against the simulated OpenStack, over real HTTP with the real openstacksdk."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

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
    finally:
        await caller.close()
