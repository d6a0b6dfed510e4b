"""Ember answers as real Heat 27.0.1 answered: every case under ``tests/heat_parity/cases``.

Heat's answers were recorded once by ``scripts/heat_reference/record.py`` (see
its README); here the same requests go to Ember's api with a planner and a
worker running, and each answer must hold Heat's (see
:func:`tests.heat_parity.cases.differences`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from services.api.app import make_app
from tests.heat_parity.cases import PROJECT, Case, all_cases, differences, shaped
from tests.heat_parity.runner import Send, decoded, run_case
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine

Client = TestClient[web.Request, web.Application]


# Cases recorded from Heat in Keystone mode against the one-machine OpenStack: Ember runs on its
# simulator, seeded with the same names (m1.tiny, cirros, private, private-subnet, public).
CLOUD_CASES = "clouds/"


@pytest.fixture
async def api(request: pytest.FixtureRequest, settings: Settings, database_url: str, tmp_path: Path,
              aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> AsyncIterator[Client]:
    case: Case = request.node.callspec.params["case"]
    async with contextlib.AsyncExitStack() as stack:
        if case.name.startswith(CLOUD_CASES):
            sim = await stack.enter_async_context(simulated_cloud(database_url, tmp_path))
            settings = dataclasses.replace(settings, cloud=sim.settings())
        await stack.enter_async_context(engine(settings))
        yield await aiohttp_client(make_app(settings))


def sender(client: Client, headers: dict[str, str] | None = None) -> Send:
    async def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {} if body is None else {"json": body}
        async with client.request(method, f"/v1/{PROJECT}{path}", headers=headers, **kwargs) as response:
            return response.status, decoded(await response.text())
    return send


def compared(case: Case, recorded: list[dict[str, Any]], answers: list[dict[str, Any]]) -> list[str]:
    problems = []
    for index, (step, heat, ember) in enumerate(zip(case.steps, recorded, answers, strict=True)):
        if step.known_difference:
            continue
        for line in differences(shaped(step, heat), shaped(step, ember), ordered=step.ordered):
            problems.append(f"step {index} ({step.method} {step.path}) {line}")
    return problems


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow_ci) if c.slow else c
                                  for c in all_cases()], ids=lambda c: c.name)
async def test_ember_answers_as_heat_did(case: Case, api: Client) -> None:
    assert case.recording.exists(), f"{case.name} has no recording: run scripts/heat_reference/record.py"
    recorded = json.loads(case.recording.read_text())["steps"]
    assert len(recorded) == len(case.steps), f"{case.name}: re-record it, its steps changed"
    # The clouds cases were recorded with a token of the cloud's member (demo): Ember's noauth
    # caller is then a member too, not its default admin.
    headers = {"X-Roles": "member,reader"} if case.name.startswith(CLOUD_CASES) else None
    answers = await run_case(sender(api, headers), case, wait_timeout=60)
    problems = compared(case, recorded, answers)
    assert not problems, f"{case.name}: {case.about}\n" + "\n".join(problems)
