"""``max_resources_per_stack`` over a whole nested tree, and ``max_nested_stack_depth``, as a user meets them.

What is known before the run (a group's size, a provider template that uses
itself) is refused with a 400 at create, update and preview, and nothing is
stored; what is known only during the run (a group whose size reads another
resource) fails its resource with Heat's reason, and no member is made.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.config import Settings
from libs.db import resources, stacks, templates
from libs.template.errors import RequestLimitExceeded
from libs.template.limits import Limits
from services.api.app import make_app
from services.worker import children
from tests.integration.engine_support import engine
from tests.support import eventually

Client = TestClient[web.Request, web.Application]
PROJECT = "limits"
OVER_LIMIT = "Request limit exceeded: Maximum resources per stack exceeded."


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
              ) -> AsyncIterator[Client]:
    async with engine(settings):
        yield await aiohttp_client(make_app(settings))


def group(count: Any, member: str = "OS::Heat::None") -> dict[str, Any]:
    return {"type": "OS::Heat::ResourceGroup",
            "properties": {"count": count, "resource_def": {"type": member}}}


def body(name: str, resources: dict[str, Any], files: dict[str, str] | None = None) -> dict[str, Any]:
    return {"stack_name": name, "files": files or {},
            "template": {"heat_template_version": "2016-10-14", "resources": resources}}


async def call(client: Client, method: str, path: str, payload: Any = None) -> tuple[int, Any]:
    async with client.request(method, f"/v1/{PROJECT}{path}", json=payload) as response:
        return response.status, await response.json(content_type=None)


async def stack_names(client: Client) -> list[str]:
    status, listed = await call(client, "GET", "/stacks?show_nested=true")
    assert status == 200
    return [s["stack_name"] for s in listed["stacks"]]


def refused(status: int, answer: Any, error_type: str, message: str) -> None:
    assert status == 400, answer
    assert answer["code"] == 400 and answer["title"] == "Bad Request"
    assert answer["error"]["type"] == error_type
    assert answer["error"]["message"] == message


# A member is a provider template of three resources: 1 group + 334 x (1 + 2) = 1003 > 1000.
TRIO = ("heat_template_version: 2016-10-14\nresources:\n"
        "  a: {type: OS::Heat::None}\n  b: {type: OS::Heat::None}\n")


@pytest.mark.parametrize(("resources", "files"), [
    ({"g": group(100000)}, {}),
    ({"g": group(1001)}, {}),
    ({"g": group(334, "trio.yaml")}, {"trio.yaml": TRIO}),
    ({"a": group(500), "b": group(500)}, {}),
], ids=["huge-group", "group-over-by-one", "group-of-nested-stacks", "two-groups"])
async def test_a_tree_over_the_limit_is_refused_up_front_and_nothing_is_made(
        api: Client, resources: dict[str, Any], files: dict[str, str]) -> None:
    for path in ("/stacks", "/stacks/preview"):
        status, answer = await call(api, "POST", path, body("over", resources, files))
        refused(status, answer, "RequestLimitExceeded", OVER_LIMIT)
    assert await stack_names(api) == []


async def test_a_tree_at_the_limit_is_accepted(api: Client) -> None:
    status, answer = await call(api, "POST", "/stacks/preview", body("at", {"g": group(999)}))
    assert status == 200, answer


async def test_an_update_over_the_limit_is_refused_and_the_stack_is_unchanged(api: Client) -> None:
    status, made = await call(api, "POST", "/stacks", body("grows", {"g": group(2)}))
    assert status == 201, made
    path = f"/stacks/grows/{made['stack']['id']}"

    async def complete() -> bool:
        _, shown = await call(api, "GET", path)
        return bool(shown["stack"]["stack_status"] == "CREATE_COMPLETE")
    await eventually(complete, timeout=30, what="the small stack to be made")
    bigger = body("grows", {"g": group(5000)})
    del bigger["stack_name"]
    for method, where in (("PUT", path), ("PUT", f"{path}/preview"), ("PATCH", path)):
        status, answer = await call(api, method, where, bigger)
        refused(status, answer, "RequestLimitExceeded", OVER_LIMIT)
    _, shown = await call(api, "GET", path)
    assert shown["stack"]["stack_status"] == "CREATE_COMPLETE"
    _, template = await call(api, "GET", f"{path}/template")
    assert template["resources"]["g"]["properties"]["count"] == 2


CYCLE = {"a.yaml": "heat_template_version: 2016-10-14\nresources:\n  x: {type: b.yaml}\n",
         "b.yaml": "heat_template_version: 2016-10-14\nresources:\n  y: {type: a.yaml}\n"}
DEPTH_MESSAGE = ("RequestLimitExceeded: resources.top<a.yaml>.resources.x<b.yaml>.resources.y<a.yaml>"
                 ".resources.x<b.yaml>.resources.y<a.yaml>.resources.x<b.yaml>: Request limit exceeded: "
                 "Recursion depth exceeds 5.")


SELF_GROUP = {"a.yaml": "heat_template_version: 2016-10-14\nresources:\n  x:\n"
              "    type: OS::Heat::ResourceGroup\n"
              "    properties:\n      count: 1\n      resource_def: {type: a.yaml}\n"}
SELF_GROUP_MESSAGE = ("RequestLimitExceeded: resources.top<nested_stack>.resources.0<a.yaml>"
                      ".resources.x<nested_stack>.resources.0<a.yaml>.resources.x<nested_stack>"
                      ".resources.0<a.yaml>: Request limit exceeded: Recursion depth exceeds 5.")
SIZED_LATER = {"r": {"type": "OS::Heat::Value", "properties": {"value": 1, "type": "number"}},
               "top": group({"get_attr": ["r", "value"]}, "a.yaml")}


@pytest.mark.parametrize(("resources", "files", "message"), [
    ({"top": {"type": "a.yaml"}}, CYCLE, DEPTH_MESSAGE),
    (SIZED_LATER, SELF_GROUP, SELF_GROUP_MESSAGE),
], ids=["two-templates", "group-of-itself"])
async def test_provider_templates_that_use_each_other_stop_at_the_depth_limit(
        api: Client, resources: dict[str, Any], files: dict[str, str], message: str) -> None:
    for path in ("/stacks", "/stacks/preview"):
        status, answer = await call(api, "POST", path, body("cycle", resources, files))
        refused(status, answer, "StackValidationFailed", message)
    assert await stack_names(api) == []


async def events_of(client: Client, path: str) -> list[tuple[str, str, str]]:
    _, listed = await call(client, "GET", f"{path}/events?sort_dir=asc")
    return [(e["resource_name"], e["resource_status"], e["resource_status_reason"]) for e in listed["events"]]


async def settle(client: Client, path: str) -> dict[str, Any]:
    async def done() -> dict[str, Any] | None:
        _, shown = await call(client, "GET", path)
        stack: dict[str, Any] = shown["stack"]
        return None if stack["stack_status"].endswith("IN_PROGRESS") else stack
    return await eventually(done, timeout=60, what=f"{path} to settle")


async def test_a_group_sized_during_the_run_over_the_limit_fails_with_heats_reason(api: Client) -> None:
    sized = {"r": {"type": "OS::Heat::Value", "properties": {"value": 1001, "type": "number"}},
             "g": group({"get_attr": ["r", "value"]})}
    status, made = await call(api, "POST", "/stacks", body("later", sized))
    assert status == 201, made
    path = f"/stacks/later/{made['stack']['id']}"
    stack = await settle(api, path)
    reason = f"RequestLimitExceeded: resources.g: {OVER_LIMIT}"
    assert (stack["stack_status"], stack["stack_status_reason"]) == (
        "CREATE_FAILED", f"Resource CREATE failed: {reason}")
    assert ("g", "CREATE_FAILED", reason) in await events_of(api, path)
    _, listed = await call(api, "GET", f"{path}/resources/g")
    assert listed["resource"]["physical_resource_id"] == ""
    assert await stack_names(api) == ["later"]  # no member stack was made


async def test_deleting_a_big_group_while_it_grows_stops_it_and_deletes_promptly(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    lifted = dataclasses.replace(settings, api=dataclasses.replace(settings.api, max_resources_per_stack=-1))
    async with engine(lifted, workers=2) as rt:
        client = await aiohttp_client(make_app(lifted))
        status, made = await call(client, "POST", "/stacks", body("big", {"g": group(3000)}))
        assert status == 201, made
        path = f"/stacks/big/{made['stack']['id']}"

        async def members_made() -> int:
            async with rt.pool.acquire() as conn:
                return int(await conn.fetchval(
                    "SELECT count(*) FROM resources r JOIN stacks s ON s.id = r.stack_id"
                    " WHERE s.parent_id = $1 AND r.action = 'CREATE' AND r.status = 'COMPLETE'",
                    uuid.UUID(made["stack"]["id"])))

        async def growing() -> bool:
            return 0 < await members_made() < 3000
        await eventually(growing, timeout=60, what="the group's first members")
        status, answer = await call(client, "DELETE", path)
        assert status == 204, answer
        # Prompt: what was made is deleted, what was not yet made is never started.
        stack = await settle(client, path)
        assert stack["stack_status"] == "DELETE_COMPLETE"
        assert await stack_names(client) == []

        async def drained() -> bool:
            info = await rt.bus.js.consumer_info(rt.names.workers.stream, rt.names.workers.durable)
            return bool(info.num_pending == 0 and info.num_ack_pending == 0)
        await eventually(drained, timeout=30, what="no work left queued for the deleted group")
        async with rt.pool.acquire() as conn:
            alive = await conn.fetchval("SELECT count(*) FROM stacks WHERE deleted_at IS NULL")
        assert alive == 0


async def test_the_worker_counts_the_roots_whole_tree_and_the_depth_as_it_makes_a_nested_stack(
        settings: Settings) -> None:
    """What the worker checks when only the run knows the size: Heat's ``_validate_nested_resources``."""
    limits = Limits(max_resources_per_stack=10)

    def of(count: int) -> dict[str, Any]:
        return {"heat_template_version": "2016-10-14",
                "resources": {f"r{i}": {"type": "OS::Heat::None"} for i in range(count)}}
    async with engine(settings) as rt, rt.pool.acquire() as conn:
        template_id = await templates.insert(conn, of(0), {}, {}, None)
        parents: list[stacks.StackRow] = []
        for depth, owned in enumerate((3, 2, 0, 0, 0, 0)):
            parent = parents[-1].id if parents else None
            row = await stacks.insert(conn, stack_id=uuid.uuid4(), name=f"s{depth}", project=PROJECT,
                                      template_id=template_id, disable_rollback=True, timeout_mins=None,
                                      tags=[], parent_id=parent, nested_depth=depth)
            await resources.insert_new(conn, row.id, [(f"r{i}", "OS::Heat::None") for i in range(owned)])
            parents.append(row)
        root, middle, deepest = parents[0], parents[1], parents[-1]
        # 3 + 2 already in the tree: a new child of 5 reaches 10, of 6 passes it (as text too).
        await children.check_limits(conn, limits, parent=middle, child=None, template=of(5))
        with pytest.raises(RequestLimitExceeded, match=r"^Request limit exceeded: Maximum resources per"):
            await children.check_limits(conn, limits, parent=middle, child=None,
                                        template=yaml.safe_dump(of(6)))
        # An update does not count the child's current resources twice.
        await children.check_limits(conn, limits, parent=root, child=middle, template=of(7))
        too_deep = r"^Request limit exceeded: Recursion depth exceeds 5\.$"
        with pytest.raises(RequestLimitExceeded, match=too_deep):
            await children.check_limits(conn, limits, parent=deepest, child=None, template=of(0))


async def test_the_update_preview_of_a_stack_the_lifted_limit_allows_lists_its_changes(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    lifted = dataclasses.replace(settings, api=dataclasses.replace(settings.api, max_resources_per_stack=-1))
    many = {f"r{i}": {"type": "OS::Heat::None"} for i in range(1001)}
    async with engine(lifted):
        client = await aiohttp_client(make_app(lifted))
        status, made = await call(client, "POST", "/stacks", body("many", many))
        assert status == 201, made
        path = f"/stacks/many/{made['stack']['id']}"

        async def complete() -> bool:
            _, shown = await call(client, "GET", path)
            return bool(shown["stack"]["stack_status"] == "CREATE_COMPLETE")
        await eventually(complete, timeout=120, what="the stack of 1,001 resources to be made")
        grown = body("many", {**many, "more": {"type": "OS::Heat::None"}})
        del grown["stack_name"]
        status, answer = await call(client, "PUT", f"{path}/preview", grown)
    assert status == 200, answer
    changes = answer["resource_changes"]
    assert [r["resource_name"] for r in changes["added"]] == ["more"]
    assert len(changes["unchanged"]) == 1001
