"""Heat's hooks through the API against a running engine: where they pause, what they say, how they clear."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from libs.config import Settings
from libs.messaging.payloads import HookClearReply, HookClearRequest, HookNotice, decode
from libs.runtime import Runtime
from tests.integration.api_support import Client, MakeClient, pausing_engine, settled, stack_of
from tests.integration.engine_support import hot
from tests.support import eventually

PAUSED = "paused until Hook"


def _chain() -> dict[str, Any]:
    """a -> b (b needs a), and c on its own."""
    return hot({
        "a": {"type": "OS::Heat::TestResource", "properties": {"value": "A"}},
        "b": {"type": "OS::Heat::TestResource", "properties": {"value": {"get_attr": ["a", "output"]}}},
        "c": {"type": "OS::Heat::TestResource", "properties": {"value": "C"}},
    })


def _env(hooks: dict[str, Any]) -> dict[str, Any]:
    return {"resource_registry": {"resources": hooks}}


@pytest.fixture
async def running(settings: Settings, aiohttp_client: MakeClient) -> AsyncIterator[tuple[Client, Runtime]]:
    async with pausing_engine(settings, aiohttp_client) as running:
        yield running


@pytest.fixture
def api(running: tuple[Client, Runtime]) -> Client:
    return running[0]


async def _create(api: Client, name: str, template: dict[str, Any], environment: dict[str, Any]) -> str:
    async with api.post("/v1/demo/stacks", json={"stack_name": name, "template": template,
                                                  "environment": environment}) as r:
        assert r.status == 201, await r.text()
        return f"/v1/demo/stacks/{name}/{(await r.json())['stack']['id']}"


async def _events(api: Client, path: str, resource: str | None = None) -> list[dict[str, Any]]:
    url = f"{path}/resources/{resource}/events" if resource else f"{path}/events"
    async with api.get(f"{url}?sort_dir=asc") as r:
        if r.status == 404 and resource:
            return []  # not planned yet
        events: list[dict[str, Any]] = (await r.json())["events"]
        return events


async def _paused_at(api: Client, path: str, resource: str, reason: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        found = [e for e in await _events(api, path, resource) if e["resource_status_reason"] == reason]
        return found[-1] if found else None
    return await eventually(probe, timeout=30, interval=0.05, what=f"{resource}: {reason}")


async def _resource(api: Client, path: str, name: str) -> dict[str, Any]:
    async with api.get(f"{path}/resources/{name}") as r:
        if r.status == 404:
            return {"resource_status": "NONE", "resource_status_reason": "", "physical_resource_id": ""}
        body: dict[str, Any] = (await r.json())["resource"]
        return body


async def _signal(api: Client, path: str, name: str, body: Any) -> tuple[int, Any]:
    async with api.post(f"{path}/resources/{name}/signal", json=body) as r:
        return r.status, (await r.json() if r.status != 200 else None)


async def test_pre_create_pauses_the_branch_not_the_stack_until_the_signal_clears_it(api: Client) -> None:
    path = await _create(api, "hooked", _chain(), _env({"a": {"hooks": "pre-create"}}))
    event = await _paused_at(api, path, "a", "CREATE paused until Hook pre-create is cleared")
    assert event["resource_status"] == "INIT_COMPLETE"  # Heat: the resource's own state, unchanged
    await eventually(lambda: _done(api, path, "c"), timeout=30, what="c, on its own branch, to finish")
    assert (await _resource(api, path, "b"))["resource_status"] == "INIT_COMPLETE"  # its dependent waits
    assert (await stack_of(api, path))["stack_status"] == "CREATE_IN_PROGRESS"

    status, body = await _signal(api, path, "a", {"unset_hook": "pre-update"})
    assert status == 400 and body["error"]["type"] == "InvalidBreakPointHook"
    stack_id = path.rsplit("/", 1)[-1]
    assert body["error"]["message"] == (
        f'The "pre-update" hook is not defined on TestResource "a" Stack "hooked" [{stack_id}]')
    status, body = await _signal(api, path, "a", {"unset_hook": "pre-lunch"})
    assert status == 400
    assert body["error"]["message"].startswith('Invalid hook type "pre-lunch" for TestResource')

    assert (await _signal(api, path, "a", {"unset_hook": "pre-create"}))[0] == 200
    await settled(api, path, "CREATE_COMPLETE")
    reasons = [e["resource_status_reason"] for e in await _events(api, path, "a")]
    paused = reasons.index("CREATE paused until Hook pre-create is cleared")
    assert reasons[paused + 1] == "Hook pre-create is cleared"
    assert reasons.index("state changed") > paused  # CREATE_IN_PROGRESS only after the clear
    status, body = await _signal(api, path, "a", {"unset_hook": "pre-create"})
    assert status == 400 and "hook is not defined on TestResource \"a\" [" in body["error"]["message"]


async def _done(api: Client, path: str, name: str) -> bool | None:
    state = (await _resource(api, path, name))["resource_status"]
    return (state.endswith("_COMPLETE") and state != "INIT_COMPLETE") or None


async def test_post_create_pre_update_and_delete_hooks_fire_where_heat_fires_them(api: Client) -> None:
    hooks = _env({"c": {"hooks": ["post-create", "pre-update", "pre-delete", "post-delete"]}})
    path = await _create(api, "lifecycle", _chain(), hooks)
    event = await _paused_at(api, path, "c", "CREATE paused until Hook post-create is cleared")
    assert event["resource_status"] == "CREATE_COMPLETE"
    assert (await stack_of(api, path))["stack_status"] == "CREATE_IN_PROGRESS"
    assert (await _signal(api, path, "c", {"unset_hook": "post-create"}))[0] == 200
    await settled(api, path, "CREATE_COMPLETE")

    # pre-update fires for a resource the update leaves unchanged, too (Heat's Resource.update)
    template = _chain()
    template["resources"]["a"]["properties"]["value"] = "A2"
    async with api.patch(path, json={"template": template, "environment": hooks}) as r:
        assert r.status == 202, await r.text()
    await _paused_at(api, path, "c", "UPDATE paused until Hook pre-update is cleared")
    await eventually(lambda: _reason_is(api, path, "b", "state changed", "UPDATE_COMPLETE"), timeout=30,
                     what="a and b to update meanwhile")
    assert (await stack_of(api, path))["stack_status"] == "UPDATE_IN_PROGRESS"
    assert (await _signal(api, path, "c", {"unset_hook": "pre-update"}))[0] == 200
    await settled(api, path, "UPDATE_COMPLETE")

    async with api.delete(path) as r:
        assert r.status == 204
    await _paused_at(api, path, "c", "DELETE paused until Hook pre-delete is cleared")
    assert (await _signal(api, path, "c", {"unset_hook": "pre-delete"}))[0] == 200
    event = await _paused_at(api, path, "c", "DELETE paused until Hook post-delete is cleared")
    assert event["resource_status"] == "DELETE_COMPLETE"
    assert (await _signal(api, path, "c", {"unset_hook": "post-delete"}))[0] == 200
    await settled(api, path, "DELETE_COMPLETE")


async def _reason_is(api: Client, path: str, name: str, reason: str, status: str) -> bool | None:
    shown = await _resource(api, path, name)
    return (shown["resource_status"] == status and shown["resource_status_reason"] == reason) or None


async def test_hooks_reach_nested_stacks_and_clear_by_a_nats_request(running: tuple[Client, Runtime]) -> None:
    api, rt = running
    group = hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {
        "count": 3,
        "resource_def": {"type": "OS::Heat::TestResource", "properties": {"value": "m%index%"}}}}})
    path = await _create(api, "nested", group, _env({"group": {"1": {"hooks": "pre-create"}}}))
    group_row = await eventually(lambda: _with_physical_id(api, path, "group"), timeout=30, what="the group")
    child = f"/v1/demo/stacks/{group_row['physical_resource_id']}"
    async with api.get(child, allow_redirects=False) as r:
        child_path = r.headers["Location"].split("/v1/", 1)[1]
    child_path = "/v1/" + child_path
    await _paused_at(api, child_path, "1", "CREATE paused until Hook pre-create is cleared")
    await eventually(lambda: _done(api, child_path, "0"), timeout=30, what="member 0")

    bus = rt.bus
    notices = await bus.nc.subscribe(f"{bus.names.prefix}.hooks.>")
    caller = f"00-{'ab' * 16}-{'cd' * 8}-01"
    reply = await bus.nc.request(bus.names.hook_clear("demo", group_row["physical_resource_id"]),
                                 HookClearRequest(resource="1", hook="pre-create").to_bytes(), timeout=10,
                                 headers={"traceparent": caller})
    answer = decode(reply.data)
    assert isinstance(answer, HookClearReply) and answer.cleared and not answer.error
    assert reply.headers and reply.headers["traceparent"].split("-")[1] == "ab" * 16  # the caller's trace
    notice = decode((await notices.next_msg(timeout=10)).data)
    assert isinstance(notice, HookNotice) and (notice.resource_name, notice.state, notice.by) == (
        "1", "cleared", "nats")
    again = decode((await bus.nc.request(bus.names.hook_clear("demo", group_row["physical_resource_id"]),
                                         HookClearRequest(resource="1", hook="pre-create").to_bytes(),
                                         timeout=10)).data)
    assert isinstance(again, HookClearReply) and not again.cleared and "not waiting" in again.error
    await settled(api, path, "CREATE_COMPLETE")


async def _with_physical_id(api: Client, path: str, name: str) -> dict[str, Any] | None:
    shown = await _resource(api, path, name)
    return shown if shown["physical_resource_id"] else None


async def test_a_clear_whose_publish_was_lost_is_picked_up_by_the_sweep(
        running: tuple[Client, Runtime]) -> None:
    api, rt = running
    path = await _create(api, "lost", _chain(), _env({"a": {"hooks": "pre-create"}}))
    await _paused_at(api, path, "a", "CREATE paused until Hook pre-create is cleared")
    async with rt.pool.acquire() as conn:  # cleared as an api would, which then died before publishing
        cleared = await conn.execute(
            "UPDATE hooks SET cleared_at = now() - interval '5 seconds', cleared_by = 'signal'"
            " WHERE resource_name = 'a' AND cleared_at IS NULL")
    assert cleared == "UPDATE 1"
    await settled(api, path, "CREATE_COMPLETE")


# Recorded from Heat 27.0.1: the update's events when "a" has restricted_actions [update] and a
# pre-update hook, and "b" (an external resource) a pre-update hook it never reaches.
RESTRICTED_AFTER_HOOK = [
    ("a", "CREATE_COMPLETE", "UPDATE paused until Hook pre-update is cleared"),
    ("a", "CREATE_COMPLETE", "Hook pre-update is cleared"),
    ("a", "UPDATE_FAILED", "update is restricted for resource."),
    ("refused", "UPDATE_FAILED",
     "Resource UPDATE failed: ResourceActionRestricted: resources.a: update is restricted for resource."),
]


async def test_a_restricted_update_is_refused_after_its_pre_update_hook_and_an_external_one_never_pauses(
        api: Client) -> None:
    def template(value: str) -> dict[str, Any]:
        return hot({"a": {"type": "OS::Heat::TestResource", "properties": {"value": value}},
                    "b": {"type": "OS::Heat::TestResource", "external_id": "outside-b",
                          "properties": {"value": value}}})
    path = await _create(api, "refused", template("one"), {})
    await settled(api, path, "CREATE_COMPLETE")
    created = len(await _events(api, path))
    env = _env({"a": {"restricted_actions": ["update"], "hooks": ["pre-update"]},
                "b": {"hooks": "pre-update"}})
    async with api.put(path, json={"template": template("two"), "environment": env}) as r:
        assert r.status == 202, await r.text()
    await _paused_at(api, path, "a", "UPDATE paused until Hook pre-update is cleared")
    assert (await stack_of(api, path))["stack_status"] == "UPDATE_IN_PROGRESS"
    assert (await _signal(api, path, "a", {"unset_hook": "pre-update"}))[0] == 200
    await settled(api, path, "UPDATE_FAILED")
    update = [(e["resource_name"], e["resource_status"], e["resource_status_reason"])
              for e in (await _events(api, path))[created:]]
    assert update == [("refused", "UPDATE_IN_PROGRESS", "Stack UPDATE started"), *RESTRICTED_AFTER_HOOK]
    assert (await _resource(api, path, "a"))["resource_status"] == "CREATE_COMPLETE"
    assert (await _resource(api, path, "b"))["resource_status"] == "CHECK_COMPLETE"
