"""A template that would hold the event loop for minutes is ended by the evaluation pool's deadline.

The issue's case: yaql's ``matches`` with a catastrophic regular expression over 30
``a`` and a ``!`` blocked the api 132 s, then the worker (three times over), and
another project's one-resource stack took 204 s. Now the api answers 400 after
the budget while it goes on answering others, and in the worker the resource
fails with the reason while another project's stack completes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs import operations
from libs.config import Settings
from libs.runtime import Runtime
from libs.template.request import StackRequest
from services.api.app import make_app
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled
from tests.support import eventually

Client = TestClient[web.Request, web.Application]
BUDGET = 2.0
HOSTILE = "a" * 30 + "!"
MATCHES = "coalesce($.data.a, '').matches('(a+)+$')"


def _hostile_value() -> dict[str, Any]:
    return {"yaql": {"expression": MATCHES, "data": {"a": HOSTILE}}}


@pytest.fixture
def budgeted(settings: Settings) -> Settings:
    return dataclasses.replace(settings, evaluation_timeout=BUDGET)


@pytest.fixture
async def api(budgeted: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> Client:
    return await aiohttp_client(make_app(budgeted))


async def _while_hostile(api: Client, method: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """Send the hostile request; meanwhile another project's request must be answered at once."""
    started = time.monotonic()
    hostile = asyncio.ensure_future(api.request(method, path, json=body))
    other = await api.get("/v1/bystander/stacks")
    answered_in = time.monotonic() - started
    assert other.status == 200
    assert not hostile.done()  # answered while the hostile evaluation still ran
    assert answered_in < BUDGET
    response = await hostile
    assert time.monotonic() - started < 5 * BUDGET
    assert response.status == 400
    fault: dict[str, Any] = await response.json()
    return fault


async def test_validate_of_a_catastrophic_regex_answers_400_and_the_api_stays_free(api: Client) -> None:
    template = hot({"r": {"type": "OS::Heat::Value", "properties": {"value": _hostile_value()}}})
    fault = await _while_hostile(api, "POST", "/v1/attacker/validate", {"template": template})
    assert fault["code"] == 400 and fault["title"] == "Bad Request"
    assert fault["error"]["type"] == "RequestLimitExceeded"
    assert fault["error"]["message"] == (
        "Request limit exceeded: Template evaluation took longer than 2 seconds.")


def _laughs(depth: int) -> str:
    """A "billion laughs": each alias level multiplies the parsed value by 9 (a few hundred bytes)."""
    lines = ["heat_template_version: 2016-10-14", "parameters:", "  p:", "    type: json",
             '    default: {l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"      , l{i}: &l{i} [{','.join([f'*l{i - 1}'] * 9)}]" for i in range(1, depth + 1)]
    lines[-1] += "}"
    return "\n".join([*lines, "outputs:", "  o:", "    value: {get_param: p}", ""])


def _repeat() -> dict[str, Any]:
    items = [str(i) for i in range(200)]
    return hot({"r": {"type": "OS::Heat::Value", "properties": {"value": {"repeat": {
        "for_each": {"%a": items, "%b": items, "%c": items}, "template": "%a%b%c"}}}}})


# Validate, as Heat's, resolves no property values: a repeat is built by what resolves them.
@pytest.mark.parametrize(("path", "template"), [("validate", _laughs(9)), ("stacks/preview", _repeat())],
                         ids=["billion-laughs", "repeat"])
async def test_other_hostile_templates_answer_400_and_the_api_stays_free(api: Client, path: str,
                                                                         template: Any) -> None:
    body = {"stack_name": "hostile", "template": template}
    fault = await _while_hostile(api, "POST", f"/v1/attacker/{path}", body)
    # Whichever budget ends it first (time, memory, or the template language's own), Heat's fault shape.
    assert fault["code"] == 400 and fault["error"]["message"]


async def test_a_stack_create_with_a_catastrophic_regex_is_refused_and_never_stored(api: Client) -> None:
    template = hot({"r": {"type": "OS::Heat::Value", "properties": {"value": _hostile_value()}}})
    body = {"stack_name": "hostile", "template": template}
    fault = await _while_hostile(api, "POST", "/v1/attacker/stacks", body)
    assert fault["error"]["type"] == "RequestLimitExceeded"
    listed = await (await api.get("/v1/attacker/stacks")).json()
    assert listed["stacks"] == []
    # The api goes on evaluating templates after the killed one.
    fine = hot({"r": {"type": "OS::Heat::Value", "properties": {"value": {"yaql": {
        "expression": MATCHES, "data": {"a": "aaa"}}}}}})
    validated = await api.post("/v1/attacker/validate", json={"template": fine})
    assert validated.status == 200


async def test_a_resource_whose_value_overruns_fails_and_other_projects_stacks_complete(
        budgeted: Settings) -> None:
    # The value is known only once ``source`` exists, so the api's validation cannot meet it:
    # it reaches the worker, as a template whose data comes from a resource does.
    hostile = hot({
        "source": {"type": "OS::Heat::Value", "properties": {"value": HOSTILE}},
        "victim": {"type": "OS::Heat::Value", "properties": {"value": {"yaql": {
            "expression": MATCHES, "data": {"a": {"get_attr": ["source", "value"]}}}}}},
    })
    async with engine(budgeted) as api:
        evil = await operations.create_stack(api.pool, api.bus, project="attacker", name="hostile",
                                             stack_request=StackRequest(template=hostile))
        # Once the victim's evaluation is under way, another project's stack is made.
        await settled_source(api, evil.id)
        started = time.monotonic()
        good = await operations.create_stack(api.pool, api.bus, project="bystander", name="one",
                                             stack_request=StackRequest(template=hot(
                                                 {"r": {"type": "OS::Heat::None"}})))
        await settled(api.pool, good.id, status="CREATE_COMPLETE", timeout=5 * BUDGET)
        assert time.monotonic() - started < 5 * BUDGET
        failed = await settled(api.pool, evil.id, status="CREATE_FAILED", timeout=10 * BUDGET)
        reason = ("resources.victim.properties: Request limit exceeded: Template evaluation took longer"
                  " than 2 seconds.")
        assert failed.status_reason == f"Resource CREATE failed: {reason}"
        rows = await resource_rows(api.pool, evil.id)
        assert (rows["victim"].action, rows["victim"].status, rows["victim"].status_reason) == (
            "CREATE", "FAILED", reason)
        # Failed once, not redelivered and evaluated again.
        victim_events = [e for e in await event_lines(api.pool, evil.id) if e[0] == "victim"]
        assert victim_events == [("victim", "CREATE_FAILED", reason)]


async def settled_source(api: Runtime, stack_id: uuid.UUID) -> None:
    """Wait until ``source`` is made, so that the victim's evaluation is what the worker does next."""

    async def made() -> bool | None:
        rows = await resource_rows(api.pool, stack_id)
        return True if "source" in rows and rows["source"].status == "COMPLETE" else None

    await eventually(made, timeout=10)


async def test_an_output_that_overruns_is_an_output_error_and_the_stack_completes(
        budgeted: Settings) -> None:
    template = hot({"source": {"type": "OS::Heat::Value", "properties": {"value": HOSTILE}}}, outputs={
        "hostile": {"value": {"yaql": {"expression": MATCHES,
                                       "data": {"a": {"get_attr": ["source", "value"]}}}}},
        "plain": {"value": {"str_replace": {"template": "got $v", "params": {
            "$v": {"get_attr": ["source", "value"]}}}}},
    })
    async with engine(budgeted) as api:
        made = await operations.create_stack(api.pool, api.bus, project="attacker", name="outputs",
                                             stack_request=StackRequest(template=template))
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=10 * BUDGET)
    assert done.outputs == [
        {"output_key": "hostile", "description": "No description given", "output_value": None,
         "output_error": "Request limit exceeded: Template evaluation took longer than 2 seconds."},
        {"output_key": "plain", "description": "No description given", "output_value": f"got {HOSTILE}"},
    ]


async def test_an_update_preview_that_overruns_over_live_attributes_answers_400(
        budgeted: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    # The check of the new template cannot meet the hostile value; the comparison with the live
    # resources does, as it resolves the new properties over their attributes.
    source = {"source": {"type": "OS::Heat::Value", "properties": {"value": HOSTILE}}}
    async with engine(budgeted) as runtime:
        api = await aiohttp_client(make_app(budgeted))
        made = await api.post("/v1/attacker/stacks", json={"stack_name": "live", "template": hot(source)})
        assert made.status == 201
        stack_id = uuid.UUID((await made.json())["stack"]["id"])
        await settled(runtime.pool, stack_id, status="CREATE_COMPLETE", timeout=10 * BUDGET)
        updated = hot({**source, "victim": {"type": "OS::Heat::Value", "properties": {"value": {"yaql": {
            "expression": MATCHES, "data": {"a": {"get_attr": ["source", "value"]}}}}}}})
        fault = await _while_hostile(api, "PUT", f"/v1/attacker/stacks/live/{stack_id}/preview",
                                     {"template": updated})
    assert fault["error"]["type"] == "RequestLimitExceeded"
