"""Ember's debugger through the API: breakpoints, paused nodes, step, continue, deadlines."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncIterator
from typing import Any

import jsonschema
import pytest

from libs.config import Settings
from libs.runtime import Runtime
from services.api import openapi
from tests.integration.api_support import Client, MakeClient, pausing_engine, settled, stack_of
from tests.integration.engine_support import hot
from tests.support import eventually


@pytest.fixture
async def running(settings: Settings, aiohttp_client: MakeClient) -> AsyncIterator[tuple[Client, Runtime]]:
    async with pausing_engine(settings, aiohttp_client) as running:
        yield running


@pytest.fixture
def api(running: tuple[Client, Runtime]) -> Client:
    return running[0]


def _conforms(method: str, path: str, body: Any) -> None:
    op = next(o for o in openapi.OPERATIONS if (o.method, o.path) == (method, path))
    assert op.schema is not None
    root = {"components": {"schemas": openapi.SCHEMAS}, "$ref": f"#/components/schemas/{op.schema}"}
    jsonschema.Draft202012Validator(root).validate(body)


def _test(value: Any) -> dict[str, Any]:
    return {"type": "OS::Heat::TestResource", "properties": {"value": value}}


async def _create(api: Client, name: str, template: dict[str, Any], environment: dict[str, Any] | None = None,
                  **extra: Any) -> str:
    async with api.post("/v1/demo/stacks", json={"stack_name": name, "template": template,
                                                  "environment": environment or {}, **extra}) as r:
        assert r.status == 201, await r.text()
        return f"/v1/demo/stacks/{name}/{(await r.json())['stack']['id']}"


async def _paused(api: Client, path: str, names: set[str]) -> dict[str, Any]:
    """The stack once exactly these resources (paths) are paused."""
    async def probe() -> dict[str, Any] | None:
        stack = await stack_of(api, path)
        return stack if {p["resource"] for p in stack["ember_paused"]} == names else None
    return await eventually(probe, timeout=30, interval=0.05, what=f"{sorted(names)} paused")


async def _post(api: Client, url: str, body: Any = None) -> tuple[int, Any]:
    async with api.post(url, json=body) as r:
        return r.status, await r.json() if r.content_type == "application/json" else None


async def _update(api: Client, path: str, template: dict[str, Any]) -> None:
    async with api.patch(path, json={"template": template}) as r:
        assert r.status == 202, await r.text()


async def test_a_breakpoint_on_a_finished_stack_pauses_its_next_update(api: Client) -> None:
    template = hot({"a": _test("A"), "b": _test({"get_attr": ["a", "output"]})})
    path = await _create(api, "later", template)
    await settled(api, path, "CREATE_COMPLETE")
    status, body = await _post(api, f"{path}/breakpoints", {"resource": "b", "hooks": "pre-update"})
    assert status == 201
    _conforms("POST", f"{openapi.S}/breakpoints", body)
    async with api.get(f"{path}/breakpoints") as r:
        listed = await r.json()
    _conforms("GET", f"{openapi.S}/breakpoints", listed)
    assert [(b["resource"], b["hooks"]) for b in listed["breakpoints"]] == [("b", ["pre-update"])]

    template["resources"]["a"]["properties"]["value"] = "A2"
    await _update(api, path, template)
    stack = await _paused(api, path, {"b"})
    assert stack["stack_status"] == "UPDATE_IN_PROGRESS"
    assert stack["stack_status_reason"] == "Paused at breakpoints: b"
    [paused] = stack["ember_paused"]
    assert (paused["hook"], paused["source"], paused["action"]) == ("pre-update", "breakpoint", "UPDATE")
    async with api.get(f"{path}/paused") as r:
        _conforms("GET", f"{openapi.S}/paused", await r.json())

    status, body = await _post(api, f"{path}/continue")
    assert status == 200 and [r["resource_name"] for r in body["released"]] == ["b"]
    _conforms("POST", f"{openapi.S}/continue", body)
    done = await settled(api, path, "UPDATE_COMPLETE")
    assert done["ember_paused"] == []

    async with api.delete(f"{path}/breakpoints/{listed['breakpoints'][0]['id']}") as r:
        assert r.status == 204
    async with api.delete(f"{path}/breakpoints/{listed['breakpoints'][0]['id']}") as r:
        assert r.status == 404 and (await r.json())["error"]["type"] == "EntityNotFound"


async def test_step_releases_the_paused_nodes_and_pauses_the_next_ones(api: Client) -> None:
    # a -> b -> d, and c on its own; the environment pauses a before it is made.
    template = hot({"a": _test("A"), "b": _test({"get_attr": ["a", "output"]}),
                    "d": _test({"get_attr": ["b", "output"]}), "c": _test("C")})
    path = await _create(api, "stepper", template, {"resource_registry": {"resources": {
        "a": {"hooks": "pre-create"}, "c": {"hooks": "pre-create"}}}})
    await _paused(api, path, {"a", "c"})
    status, body = await _post(api, f"{path}/step")
    assert status == 200 and sorted(r["resource_name"] for r in body["released"]) == ["a", "c"]
    stack = await _paused(api, path, {"b"})
    assert [p["source"] for p in stack["ember_paused"]] == ["step"]
    status, body = await _post(api, f"{path}/step")
    assert [r["resource_name"] for r in body["released"]] == ["b"]
    await _paused(api, path, {"d"})
    status, body = await _post(api, f"{path}/continue")
    assert [r["resource_name"] for r in body["released"]] == ["d"]
    await settled(api, path, "CREATE_COMPLETE")


async def test_nested_paths_and_type_conditions_pick_one_member_of_a_group(api: Client) -> None:
    def group(value: str) -> dict[str, Any]:
        return hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": 3, "resource_def": _test(value)}}, "other": _test(value)})
    path = await _create(api, "grouped", group("x"))
    await settled(api, path, "CREATE_COMPLETE")
    await _post(api, f"{path}/breakpoints", {"resource": "group/1", "hooks": ["pre-update"],
                                             "resource_type": "OS::Heat::TestResource"})
    await _post(api, f"{path}/breakpoints", {"resource": "*", "hooks": ["pre-update"],
                                             "resource_type": "OS::Heat::None"})  # matches nothing here
    await _update(api, path, group("y"))
    stack = await _paused(api, path, {"group/1"})
    assert stack["ember_paused"][0]["resource_name"] == "1"
    assert stack["stack_status_reason"] == "Paused at breakpoints: group/1"
    await _post(api, f"{path}/continue")
    await settled(api, path, "UPDATE_COMPLETE")


async def test_a_breakpoint_deadline_fails_the_resource_or_goes_on(api: Client) -> None:
    template = hot({"a": _test("A"), "b": _test("B")})
    path = await _create(api, "deadlines", template)
    await settled(api, path, "CREATE_COMPLETE")
    await _post(api, f"{path}/breakpoints", {"resource": "a", "hooks": "pre-update", "timeout": 0.3,
                                             "on_timeout": "continue"})
    # b's time is up later than a's: a stack that failed first would never start a's update
    # (a failed traversal starts nothing more), which is not what this test is about.
    await _post(api, f"{path}/breakpoints", {"resource": "b", "hooks": "pre-update", "timeout": 2.0})
    await _update(api, path, hot({"a": _test("A2"), "b": _test("B2")}))
    failed = await settled(api, path, "UPDATE_FAILED")
    assert failed["stack_status_reason"] == "Resource UPDATE failed: Hook pre-update timed out"
    async with api.get(f"{path}/resources") as r:
        shown = {x["resource_name"]: x for x in (await r.json())["resources"]}
    assert shown["b"]["resource_status"] == "UPDATE_FAILED"
    assert shown["b"]["resource_status_reason"] == "Hook pre-update timed out"
    assert shown["a"]["resource_status"] == "UPDATE_COMPLETE"  # it went on when its time was up
    async with api.get(f"{path}/resources/a/events?sort_dir=asc") as r:
        reasons = [e["resource_status_reason"] for e in (await r.json())["events"]]
    assert reasons.index("Hook pre-update timed out") > reasons.index(
        "UPDATE paused until Hook pre-update is cleared")


async def test_the_stack_timeout_still_applies_while_paused(running: tuple[Client, Runtime]) -> None:
    api, rt = running
    path = await _create(api, "forgotten", hot({"a": _test("A")}),
                         {"resource_registry": {"resources": {"a": {"hooks": "pre-create"}}}},
                         timeout_mins=60)
    await _paused(api, path, {"a"})
    async with rt.pool.acquire() as conn:  # an hour is long for a test: the deadline passes now
        await conn.execute("UPDATE traversals SET deadline = now() WHERE stack_id = $1",
                           uuid.UUID(path.rsplit("/", 1)[-1]))
    failed = await settled(api, path, "CREATE_FAILED")
    assert failed["stack_status_reason"] == "Timed out"  # Heat's words
    assert failed["ember_paused"] == []


async def test_many_paused_nodes_hold_no_worker(api: Client) -> None:
    # Two worker slots and forty nodes paused: the free branch still runs to its end.
    resources = {f"p{i}": _test(i) for i in range(40)} | {"free": _test("F")}
    path = await _create(api, "crowd", hot(resources),
                         {"resource_registry": {"resources": {"p*": {"hooks": "pre-create"}}}})
    await _paused(api, path, {f"p{i}" for i in range(40)})

    async def free_done() -> bool | None:
        async with api.get(f"{path}/resources/free") as r:
            return (await r.json())["resource"]["resource_status"] == "CREATE_COMPLETE" or None
    await eventually(free_done, timeout=30, interval=0.05, what="the free branch")
    status, body = await _post(api, f"{path}/continue")
    assert status == 200 and len(body["released"]) == 40
    await settled(api, path, "CREATE_COMPLETE")


@pytest.mark.parametrize(("body", "message"), [
    ({"hooks": ["pre-create"]}, "breakpoint.resource: a resource name"),
    ({"resource": "a", "hooks": ["pre-create", "pre-lunch"]},
     'breakpoint.hooks[1]: Invalid hook type "pre-lunch"'),
    ({"resource": "a", "timeout": -1}, "breakpoint.timeout: a number of seconds"),
    ({"resource": "a", "on_timeout": "panic"}, "breakpoint.on_timeout: one of fail, continue"),
    ({"resource": "a", "colour": "red"}, "breakpoint.colour: unknown field"),
    ({"resource": "a//b"}, "breakpoint.resource: a resource name"),
])
async def test_a_bad_breakpoint_is_a_400_naming_the_field(api: Client, body: dict[str, Any],
                                                          message: str) -> None:
    path = await _create(api, "strict", hot({"a": _test("A")}))
    status, answer = await _post(api, f"{path}/breakpoints", body)
    assert status == 400 and answer["error"]["type"] == "HTTPBadRequest"
    assert answer["error"]["message"].startswith(message)
    async with api.get(f"{path}/breakpoints") as r:
        assert (await r.json())["breakpoints"] == []


async def test_resource_show_gives_the_properties_a_paused_action_is_about_to_use(api: Client) -> None:
    template = hot({"a": _test("A"), "b": _test({"get_attr": ["a", "output"]})})
    path = await _create(api, "preview", template)
    await settled(api, path, "CREATE_COMPLETE")
    await _post(api, f"{path}/breakpoints", {"resource": "b", "hooks": "pre-update"})
    template["resources"]["a"]["properties"]["value"] = "A2"
    await _update(api, path, template)
    await _paused(api, path, {"b"})
    async with api.get(f"{path}/resources/b") as r:
        shown = (await r.json())["resource"]
    _conforms("GET", f"{openapi.R}", {"resource": shown})
    assert shown["ember_paused"]["hook"] == "pre-update"
    assert shown["ember_paused"]["properties"]["value"] == "A2"  # a's new output, resolved now
    assert shown["resource_status"] == "CREATE_COMPLETE"  # the resource itself has not moved
    async with api.get(f"{path}/resources/a") as r:
        assert "ember_paused" not in (await r.json())["resource"]
    await _post(api, f"{path}/continue")
    await settled(api, path, "UPDATE_COMPLETE")


async def test_a_named_step_holds_an_action_between_its_start_and_its_check(api: Client) -> None:
    slow: dict[str, Any] = {"type": "OS::Heat::TestResource",
            "properties": {"value": "v1", "action_wait_secs": {"update": 0.1}}}
    path = await _create(api, "named", hot({"slow": slow}))
    await settled(api, path, "CREATE_COMPLETE")
    status, _ = await _post(api, f"{path}/breakpoints", {"resource": "slow", "hooks": ["update:started"]})
    assert status == 201
    slow["properties"]["value"] = "v2"
    await _update(api, path, hot({"slow": slow}))
    stack = await _paused(api, path, {"slow"})
    assert stack["ember_paused"][0]["hook"] == "update:started"
    async with api.get(f"{path}/resources/slow") as r:
        assert (await r.json())["resource"]["resource_status"] == "UPDATE_IN_PROGRESS"  # started, held
    status, _ = await _post(api, f"{path}/resources/slow/signal", {"unset_hook": "update:started"})
    assert status == 200
    await settled(api, path, "UPDATE_COMPLETE")
    async with api.get(f"{path}/resources/slow/events?sort_dir=asc") as r:
        reasons = [e["resource_status_reason"] for e in (await r.json())["events"]]
    assert "UPDATE paused until Hook update:started is cleared" in reasons
    assert "Hook update:started is cleared" in reasons


async def test_stepping_reaches_into_nested_stacks_made_while_stepping(api: Client) -> None:
    inner = "heat_template_version: 2016-10-14\nresources:\n  deep: {type: OS::Heat::TestResource}\n"
    template = hot({"first": _test("F"),
                    "nest": {"type": "OS::Heat::Stack", "properties": {"template": inner},
                             "depends_on": "first"}})
    path = await _create(api, "deepstep", template,
                         {"resource_registry": {"resources": {"first": {"hooks": "pre-create"}}}})
    await _paused(api, path, {"first"})
    await _post(api, f"{path}/step")
    await _paused(api, path, {"nest"})
    await _post(api, f"{path}/step")
    await _paused(api, path, {"nest/deep"})  # the nested stack made after the step steps too
    status, body = await _post(api, f"{path}/continue")
    assert status == 200 and [r["resource_name"] for r in body["released"]] == ["deep"]
    await settled(api, path, "CREATE_COMPLETE")


async def test_a_pre_update_breakpoint_pauses_a_resource_the_update_leaves_unchanged(api: Client) -> None:
    # Heat's pre-update fires for every existing resource an update visits; the planner,
    # which settles unchanged resources in bulk, must leave this one a node of its own.
    resources = {f"r{i}": _test(i) for i in range(20)}
    path = await _create(api, "still", hot(resources))
    await settled(api, path, "CREATE_COMPLETE")
    await _post(api, f"{path}/breakpoints", {"resource": "r7", "hooks": ["pre-update"]})
    resources["r0"] = _test("changed")
    await _update(api, path, hot(resources))
    await _paused(api, path, {"r7"})
    await _post(api, f"{path}/continue")
    await settled(api, path, "UPDATE_COMPLETE")
    async with api.get(f"{path}/resources/r1/events") as r:  # the others were settled without a pause
        assert not any("paused" in e["resource_status_reason"] for e in (await r.json())["events"])


async def test_a_delete_does_not_wait_for_an_action_held_at_a_named_step(api: Client) -> None:
    # The held update would wait for its hook for ever: the delete cancels it, as Heat's
    # delete cancels whatever runs, instead of waiting on it.
    slow: dict[str, Any] = {"type": "OS::Heat::TestResource",
                            "properties": {"value": "v1", "action_wait_secs": {"update": 0.1}}}
    path = await _create(api, "held", hot({"slow": slow}))
    await settled(api, path, "CREATE_COMPLETE")
    status, _ = await _post(api, f"{path}/breakpoints", {"resource": "slow", "hooks": ["update:started"]})
    assert status == 201
    slow["properties"]["value"] = "v2"
    await _update(api, path, hot({"slow": slow}))
    await _paused(api, path, {"slow"})
    async with api.delete(path) as r:
        assert r.status == 204
    await settled(api, path, "DELETE_COMPLETE")
    async with api.get(f"{path}/resources/slow/events?sort_dir=asc") as r:
        reasons = [(e["resource_status"], e["resource_status_reason"]) for e in (await r.json())["events"]]
    assert reasons[-3:] == [("UPDATE_FAILED", "UPDATE aborted (user triggered cancel)"),
                            ("DELETE_IN_PROGRESS", "state changed"), ("DELETE_COMPLETE", "state changed")]


async def test_a_breakpoint_between_batches_holds_a_group_after_each_batch(api: Client) -> None:
    group = {"type": "OS::Heat::ResourceGroup", "properties": {"count": 5, "resource_def": _test("m")},
             "update_policy": {"batch_create": {"max_batch_size": 2}}}
    path = await _create(api, "batched", hot({"group": group}))
    status, _ = await _post(api, f"{path}/breakpoints", {"resource": "group", "hooks": ["create:batch"]})
    assert status == 201

    async def members() -> int:
        async with api.get(f"{path}/resources?nested_depth=1") as r:
            return sum(1 for x in (await r.json())["resources"] if x.get("parent_resource") == "group")
    for batch, made in ((1, 2), (2, 4)):
        stack = await _paused(api, path, {"group"})
        assert stack["ember_paused"][0]["hook"] == f"create:batch@{batch}"
        assert await members() == made  # held after this batch, before the next starts
        status, _ = await _post(api, f"{path}/resources/group/signal", {"unset_hook": "create:batch"})
        assert status == 200
        hook = f"create:batch@{batch}"
        await eventually(functools.partial(_moved_on, api, path, hook), timeout=30,
                         what=f"the group past {hook}")
    await settled(api, path, "CREATE_COMPLETE")
    assert await members() == 5


async def _moved_on(api: Client, path: str, hook: str) -> bool:
    stack = await stack_of(api, path)
    return all(p["hook"] != hook for p in stack["ember_paused"])
