"""Paged resource and event lists through the API: Ember's limit/marker on resources (Heat has none),
Heat's on events; every page together is the unpaged list, and a bad marker is Heat's fault."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp import web
from yarl import URL

from libs.config import Settings
from services.api.app import make_app
from tests.integration.api_support import Client, heat_fault, settled
from tests.integration.engine_support import engine

TEMPLATE = {"heat_template_version": "2016-10-14", "resources": {
    "first": {"type": "OS::Heat::None"},
    "second": {"type": "OS::Heat::None", "depends_on": ["first"]},
    "third": {"type": "OS::Heat::TestResource", "depends_on": ["first", "second"]},
    "group": {"type": "OS::Heat::ResourceGroup",
              "properties": {"count": 3, "resource_def": {"type": "OS::Heat::None"}}}}}


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
              ) -> AsyncIterator[Client]:
    async with engine(settings):
        yield await aiohttp_client(make_app(settings))


async def _get(api: Client, url: str) -> Any:
    async with api.get(url) as r:
        assert r.status == 200, await r.text()
        return await r.json()


async def _pages(api: Client, url: str) -> list[list[dict[str, Any]]]:
    """Every page, following each answer's next link."""
    pages = []
    while True:
        body = await _get(api, url)
        pages.append(body["resources"])
        nexts = [link["href"] for link in body.get("links", []) if link["rel"] == "next"]
        if not nexts:
            return pages
        url = URL(nexts[0]).path_qs


def _key(item: dict[str, Any]) -> tuple[str, str]:
    return item["links"][1]["href"], item["resource_name"]


async def test_resource_pages_together_are_the_unpaged_list(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "paged", "template": TEMPLATE}) as r:
        stack_id = (await r.json())["stack"]["id"]
    path = f"/v1/demo/stacks/paged/{stack_id}"
    await settled(api, path, "CREATE_COMPLETE")
    for query in ("", "nested_depth=1", "type=OS::Heat::None", "nested_depth=1&status=COMPLETE",
                  "nested_depth=1&name=0&name=second"):
        whole = (await _get(api, f"{path}/resources?{query}"))["resources"]
        assert "links" not in await _get(api, f"{path}/resources?{query}")
        for size in (1, 2, 5):
            pages = await _pages(api, f"{path}/resources?{query}&limit={size}")
            assert all(len(page) <= size for page in pages)
            together = [item for page in pages for item in page]
            assert sorted(map(_key, together)) == sorted(map(_key, whole)), (query, size)
            # Within a stack, in name order.
            for page in pages:
                for a, b in itertools.pairwise(page):
                    assert _key(a) < _key(b) or a["links"][1] != b["links"][1], (a, b)
    whole = (await _get(api, f"{path}/resources?nested_depth=1"))["resources"]
    first = next(item for item in whole if item["resource_name"] == "first")
    assert sorted(first["required_by"]) == ["second", "third"]
    # A page's required_by is the whole stack's, and a member shows its parent resource.
    assert (await _get(api, f"{path}/resources?limit=1"))["resources"] == [first]
    member = (await _get(api, f"{path}/resources?nested_depth=1&limit=1&marker={quote('group/0')}"))
    assert [(m["resource_name"], m["parent_resource"]) for m in member["resources"]] == [("1", "group")]
    assert URL(member["links"][0]["href"]).query["marker"] == "group/1"
    group = next(item for item in whole if item["resource_name"] == "group")
    nested_link = [link for link in group["links"] if link["rel"] == "nested"]
    assert nested_link and nested_link[0]["href"].endswith(group["physical_resource_id"])
    assert (await _get(api, f"{path}/resources/group"))["resource"]["links"] == group["links"]
    # Resource show finds a resource by name or by physical id, with the same required_by.
    shown = (await _get(api, f"{path}/resources/first"))["resource"]
    assert shown["required_by"] == first["required_by"]
    by_id = (await _get(api, f"{path}/resources/{first['physical_resource_id']}"))["resource"]
    assert by_id["resource_name"] == "first"


async def test_bad_paging_is_heats_fault(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "bad", "template": TEMPLATE}) as r:
        stack_id = (await r.json())["stack"]["id"]
    path = f"/v1/demo/stacks/bad/{stack_id}"
    await settled(api, path, "CREATE_COMPLETE")
    cases = [
        ("resources?marker=nope", (404, "EntityNotFound", "The Resource (nope) could not be found.")),
        ("resources?limit=1&marker=group%2F9",
         (404, "EntityNotFound", "The Resource (group/9) could not be found.")),
        # Without nested_depth the group's members are not listed: no marker reaches them.
        ("resources?marker=group%2F0", (404, "EntityNotFound", "The Resource (group/0) could not be found.")),
        ("resources?limit=-1", (400, "HTTPBadRequest", "Value must be at least 0 for 'limit'.")),
        ("resources?limit=x", (400, "HTTPBadRequest", "Only integer is acceptable by 'limit'.")),
        ("resources?limit=4294967296",
         (400, "HTTPBadRequest", "Value must be at most 2147483647 for 'limit'.")),
        *((f"{route}=a%00", (400, "HTTPBadRequest", f"The query parameter '{name}' may not contain a NUL"
                                                     " character (\\u0000)."))
          for route, name in (("resources?marker", "marker"), ("resources?type", "type"),
                              ("events?resource_name", "resource_name"))),
        ("resources?sort_dir=asc", (400, "HTTPBadRequest", "Invalid filter parameters ['sort_dir']")),
        ("resources/a%00", (404, "EntityNotFound", "The Resource (a\0) could not be found.")),
        ("events?marker=nope", (404, "EntityNotFound", "The Event (nope) could not be found.")),
    ]
    for url, (status, error_type, message) in cases:
        async with api.get(f"{path}/{url}") as r:
            assert (r.status, await r.read()) == (status, heat_fault(status, error_type, message)), url
    assert (await _get(api, f"{path}/resources?limit=0")) == {"resources": []}


async def test_event_pages_together_are_the_unpaged_list(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "events", "template": TEMPLATE}) as r:
        stack_id = (await r.json())["stack"]["id"]
    path = f"/v1/demo/stacks/events/{stack_id}"
    await settled(api, path, "CREATE_COMPLETE")
    for query in ("", "nested_depth=1", "sort_dir=asc", "resource_status=COMPLETE&nested_depth=1"):
        whole = [e["id"] for e in (await _get(api, f"{path}/events?{query}"))["events"]]
        assert len(whole) > 3
        paged: list[str] = []
        marker = ""
        while True:
            page = (await _get(api, f"{path}/events?{query}&limit=3{marker}"))["events"]
            paged += [e["id"] for e in page]
            if len(page) < 3:
                break
            marker = f"&marker={page[-1]['id']}"
        assert paged == whole, query
