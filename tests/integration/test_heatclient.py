"""python-heatclient's own API against Ember, as a program using it talks to a noauth Heat."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer
from heatclient import client as heat_client
from heatclient import exc as heat_exc

from libs.config import Settings
from services.api.app import make_app
from tests.integration.engine_support import engine
from tests.support import wait_until

TEMPLATE = {"heat_template_version": "2016-10-14",
            "parameters": {"word": {"type": "string"}},
            "resources": {"r": {"type": "OS::Heat::TestResource",
                                "properties": {"value": {"get_param": "word"}}}},
            "outputs": {"out": {"value": {"get_attr": ["r", "output"]}}}}


def _session(url: str) -> None:
    heat = heat_client.Client("1", endpoint=f"{url}/v1/demo", token="anything")
    created = heat.stacks.create(stack_name="hc", template=TEMPLATE, parameters={"word": "one"})
    stack_id = created["stack"]["id"]

    def status() -> str | None:
        found = heat.stacks.get("hc").stack_status  # by name: a 302 the client follows
        return found if not found.endswith("IN_PROGRESS") else None

    assert wait_until(status, timeout=30, interval=0.1, what="create") == "CREATE_COMPLETE"
    stack = heat.stacks.get(stack_id)
    assert stack.stack_name == "hc" and stack.outputs[0]["output_value"] == "one"
    assert [s.stack_name for s in heat.stacks.list()] == ["hc"]
    assert [r.resource_name for r in heat.resources.list("hc")] == ["r"]
    assert heat.resources.get("hc", "r").attributes == {"output": "one"}
    events = heat.events.list("hc", sort_dir="asc")
    assert events[0].resource_status_reason == "Stack CREATE started"
    assert heat.stacks.output_show("hc", "out")["output"]["output_value"] == "one"
    assert heat.stacks.template("hc")["parameters"] == TEMPLATE["parameters"]

    heat.stacks.update(stack_id, existing=True, parameters={"word": "two"})
    assert wait_until(status, timeout=30, interval=0.1, what="update") == "UPDATE_COMPLETE"
    assert heat.stacks.get("hc").outputs[0]["output_value"] == "two"

    try:
        heat.stacks.get("missing")
    except heat_exc.HTTPNotFound as exc:
        assert "The Stack (missing) could not be found." in str(exc)
    else:
        raise AssertionError("a missing stack was found")

    heat.stacks.delete(stack_id)
    assert wait_until(lambda: heat.stacks.get(stack_id).stack_status == "DELETE_COMPLETE" or None,
                      timeout=30, interval=0.1, what="delete")


async def test_heatclient_api_with_a_token_in_noauth_mode(
        settings: Settings, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]) -> None:
    async with engine(settings):
        server = await aiohttp_server(make_app(settings))
        url: Any = server.make_url("")
        await asyncio.to_thread(_session, str(url).rstrip("/"))
