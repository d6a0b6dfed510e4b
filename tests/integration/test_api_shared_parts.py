"""What the stack, event and snapshot routes share: their sort_dir, marker and path-id errors, byte for
byte, and a stack show that follows its stack's template across an update."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from libs.config import Settings
from services.api.app import make_app
from tests.integration.api_support import Client, heat_fault, settled
from tests.integration.engine_support import engine


def _template(description: str) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "description": description,
            "parameters": {"word": {"type": "string", "default": "hello"}},
            "resources": {"first": {"type": "OS::Heat::TestResource",
                                    "properties": {"value": {"get_param": "word"}}}}}


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
              ) -> AsyncIterator[Client]:
    async with engine(settings):
        yield await aiohttp_client(make_app(settings))


SORT_DIR = (400, "HTTPBadRequest", "Unknown sort direction, must be 'desc' or 'asc'")


async def test_query_and_path_errors_are_heats(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "parts", "template": _template("one")}) as r:
        stack_id = (await r.json())["stack"]["id"]
    path = f"/v1/demo/stacks/parts/{stack_id}"
    await settled(api, path, "CREATE_COMPLETE")
    cases = [
        ("/v1/demo/stacks?sort_dir=up", SORT_DIR),
        ("/v1/demo/stacks?marker=nope", (404, "EntityNotFound", "The Stack (nope) could not be found.")),
        (f"{path}/events?sort_dir=sideways", SORT_DIR),
        (f"{path}/resources/first/events?sort_dir=up", SORT_DIR),
        (f"{path}/events?marker=nope", (404, "EntityNotFound", "The Event (nope) could not be found.")),
        (f"{path}/resources/first/events/nope",
         (404, "EntityNotFound", "The Event (nope) could not be found.")),
        (f"{path}/resources/first/events/{uuid.UUID(int=1)}",
         (404, "EntityNotFound", f"The Event ({uuid.UUID(int=1)}) could not be found.")),
        (f"{path}/snapshots/nope", (404, "EntityNotFound", "The Snapshot (nope) could not be found.")),
        (f"{path}/snapshots/{uuid.UUID(int=2)}",
         (404, "EntityNotFound", f"The Snapshot ({uuid.UUID(int=2)}) could not be found.")),
        # The stack is looked up before the id is read: an unknown stack is the 404, not the bad id.
        (f"/v1/demo/stacks/gone/{uuid.UUID(int=3)}/snapshots/nope",
         (404, "EntityNotFound", "The Stack (gone) could not be found.")),
        (f"/v1/demo/stacks/gone/{uuid.UUID(int=3)}/resources/first/events/nope",
         (404, "EntityNotFound", "The Stack (gone) could not be found.")),
    ]
    for url, (status, error_type, message) in cases:
        async with api.get(url) as r:
            assert (r.status, await r.read()) == (status, heat_fault(status, error_type, message)), url


async def test_show_follows_the_template_across_an_update(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "changing", "template": _template("one"),
                                                 "parameters": {"word": "hi"}}) as r:
        stack_id = (await r.json())["stack"]["id"]
    path = f"/v1/demo/stacks/changing/{stack_id}"
    first = await settled(api, path, "CREATE_COMPLETE")
    async with api.get(path) as r:  # shown twice from one stored template: the same both times
        assert (await r.json())["stack"]["parameters"] == first["parameters"]
    assert first["description"] == "one" and first["parameters"]["word"] == "hi"
    assert first["parameters"]["OS::stack_id"] == stack_id
    async with api.put(path, json={"template": _template("two"), "parameters": {"word": "ho"}}) as r:
        assert r.status == 202
    second = await settled(api, path, "UPDATE_COMPLETE")
    assert second["description"] == second["template_description"] == "two"
    assert second["parameters"]["word"] == "ho"
