"""The stack routes of Heat's API v1 against a running engine: shapes, codes, redirects, projects."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import jsonschema
import pytest
from aiohttp import web

from libs.config import Settings
from services.api import openapi
from services.api.app import make_app
from tests.integration.api_support import Client, settled
from tests.integration.engine_support import engine

TEMPLATE = {
    "heat_template_version": "2016-10-14",
    "description": "two resources",
    "parameters": {"word": {"type": "string", "default": "hello"}},
    "resources": {
        "first": {"type": "OS::Heat::TestResource", "properties": {"value": {"get_param": "word"}}},
        "second": {"type": "OS::Heat::TestResource",
                   "properties": {"value": {"get_attr": ["first", "output"]}}},
    },
    "outputs": {"said": {"value": {"get_attr": ["second", "output"]}, "description": "what was said"}},
}


@pytest.fixture
async def api(settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
              ) -> AsyncIterator[Client]:
    async with engine(settings):
        yield await aiohttp_client(make_app(settings))


def _conforms(method: str, path: str, body: Any) -> None:
    """The answer matches the OpenAPI document's schema for that route and method."""
    op = next(o for o in openapi.OPERATIONS if (o.method, o.path) == (method, path))
    assert op.schema is not None
    root = {"components": {"schemas": openapi.SCHEMAS}, "$ref": f"#/components/schemas/{op.schema}"}
    jsonschema.Draft202012Validator(root).validate(body)


async def test_create_show_list_events_and_resources(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "talk", "template": TEMPLATE,
                                                 "parameters": {"word": "hi"}, "tags": "a,b"}) as r:
        assert r.status == 201
        created = (await r.json())["stack"]
        location = r.headers["Location"]
    stack_id = created["id"]
    assert location == created["links"][0]["href"] and location.endswith(f"/v1/demo/stacks/talk/{stack_id}")
    path = f"/v1/demo/stacks/talk/{stack_id}"
    stack = await settled(api, path, "CREATE_COMPLETE")
    _conforms("GET", openapi.S, {"stack": stack})
    assert stack["outputs"] == [{"output_key": "said", "output_value": "hi", "description": "what was said"}]
    assert stack["parameters"]["word"] == "hi" and stack["parameters"]["OS::stack_name"] == "talk"
    assert stack["description"] == stack["template_description"] == "two resources"
    assert stack["tags"] == ["a", "b"] and stack["disable_rollback"] is True
    assert stack["creation_time"].endswith("Z")

    # Name lookups redirect to the canonical URL, sub-path and query kept.
    async with api.get("/v1/demo/stacks/talk/events?sort_dir=asc", allow_redirects=False) as r:
        assert r.status == 302
        assert r.headers["Location"].endswith(f"/v1/demo/stacks/talk/{stack_id}/events?sort_dir=asc")
    async with api.get(f"/v1/demo/stacks/{stack_id}", allow_redirects=False) as r:
        assert r.status == 302 and r.headers["Location"].endswith(path)

    async with api.get(f"{path}/events?sort_dir=asc") as r:
        listed_events = await r.json()
        _conforms("GET", f"{openapi.S}/events", listed_events)
        lines = [(e["resource_name"], e["resource_status"], e["resource_status_reason"])
                 for e in listed_events["events"]]
    assert lines[0] == ("talk", "CREATE_IN_PROGRESS", "Stack CREATE started")
    assert lines[-1] == ("talk", "CREATE_COMPLETE", "Stack CREATE completed successfully")
    assert ("first", "CREATE_COMPLETE", "state changed") in lines

    async with api.get(f"{path}/resources") as r:
        listed_resources = await r.json()
    _conforms("GET", f"{openapi.S}/resources", listed_resources)
    resources = {x["resource_name"]: x for x in listed_resources["resources"]}
    assert resources["first"]["required_by"] == ["second"]
    assert resources["second"]["resource_status"] == "CREATE_COMPLETE"
    async with api.get(f"{path}/resources?bogus=1") as r:
        assert r.status == 400
        assert (await r.json())["error"]["message"] == "Invalid filter parameters ['bogus']"
    async with api.get(f"{path}/resources/second?with_attr=output") as r:
        shown = await r.json()
    _conforms("GET", openapi.R, shown)
    assert shown["resource"]["attributes"]["output"] == "hi"
    async with api.get(f"{path}/outputs/said") as r:
        output = await r.json()
    _conforms("GET", f"{openapi.S}/outputs/{{output_key}}", output)
    assert output["output"]["output_value"] == "hi"
    async with api.get(f"{path}/template") as r:
        assert (await r.json())["description"] == "two resources"

    async with api.get("/v1/demo/stacks") as r:
        page = await r.json()
    _conforms("GET", "/v1/{project_id}/stacks", page)
    listed = page["stacks"]
    assert [s["stack_name"] for s in listed] == ["talk"] and listed[0]["stack_status"] == "CREATE_COMPLETE"


async def test_update_then_delete(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "talk", "template": TEMPLATE,
                                                 "parameters": {"word": "hi"}}) as r:
        path = f"/v1/demo/stacks/talk/{(await r.json())['stack']['id']}"
    await settled(api, path, "CREATE_COMPLETE")
    async with api.patch(path, json={"parameters": {"word": "bye"}}) as r:
        assert r.status == 202
    stack = await settled(api, path, "UPDATE_COMPLETE")
    assert stack["outputs"][0]["output_value"] == "bye"

    async with api.delete(path) as r:
        assert r.status == 204
    await settled(api, path, "DELETE_COMPLETE")
    async with api.get("/v1/demo/stacks") as r:
        assert (await r.json())["stacks"] == []
    async with api.get("/v1/demo/stacks/talk") as r:  # by name: deleted stacks are gone
        assert r.status == 404
        fault = await r.json()
    assert fault["error"] == {"type": "EntityNotFound", "message": "The Stack (talk) could not be found.",
                              "traceback": None}


async def test_an_update_sending_the_same_request_again_keeps_the_stack_as_it_is(api: Client) -> None:
    body = {"template": TEMPLATE, "parameters": {"word": "hi"}}
    async with api.post("/v1/demo/stacks", json={"stack_name": "talk", **body}) as r:
        path = f"/v1/demo/stacks/talk/{(await r.json())['stack']['id']}"
    await settled(api, path, "CREATE_COMPLETE")
    for _ in range(2):
        async with api.put(path, json=body) as r:
            assert r.status == 202
        stack = await settled(api, path, "UPDATE_COMPLETE")
        assert stack["outputs"][0]["output_value"] == "hi"
    async with api.get(f"{path}/template") as r:
        assert await r.json() == TEMPLATE
    async with api.put(path, json={**body, "parameters": {"word": "bye"}}) as r:
        assert r.status == 202
    stack = await settled(api, path, "UPDATE_COMPLETE")
    assert stack["outputs"][0]["output_value"] == "bye"


async def test_a_stack_of_one_project_is_invisible_to_another(api: Client) -> None:
    async with api.post("/v1/alpha/stacks", json={"stack_name": "mine", "template": TEMPLATE}) as r:
        stack_id = (await r.json())["stack"]["id"]
    for path in (f"/v1/beta/stacks/mine/{stack_id}", f"/v1/beta/stacks/{stack_id}", "/v1/beta/stacks/mine"):
        async with api.get(path, allow_redirects=False) as r:
            assert r.status == 404, path
    async with api.get("/v1/beta/stacks") as r:
        assert (await r.json())["stacks"] == []
    # An admin's list of every project's stacks names each stack's project (noauth callers are admins).
    async with api.get("/v1/beta/stacks?global_tenant=true") as r:
        assert [(s["stack_name"], s["project"]) for s in (await r.json())["stacks"]] == [("mine", "alpha")]
    async with api.options(f"/v1/alpha/stacks/mine/{stack_id}") as r:
        assert r.status == 204 and r.headers["Allow"] == "DELETE, GET, HEAD, OPTIONS, PATCH, PUT"
    async with api.post("/v1/beta/stacks", json={"stack_name": "mine", "template": TEMPLATE}) as r:
        assert r.status == 201  # names are per project


@pytest.mark.parametrize(("body", "status", "error_type", "message"), [
    ({"template": TEMPLATE}, 400, "HTTPBadRequest", "No stack name specified"),
    ({"stack_name": "x"}, 400, "HTTPBadRequest", "No template specified"),
    ({"stack_name": "1x", "template": TEMPLATE}, 400, "HTTPBadRequest", "Invalid stack name 1x"),
    ({"stack_name": "x", "template": {"heat_template_version": "2016-10-14",
                                      "resources": {"r": {"type": "OS::Heat::TestResource",
                                                          "properties": {"nope": 1}}}}},
     400, "StackValidationFailed", "Property error: resources.r.properties: Unknown Property nope"),
    ({"stack_name": "x", "template": TEMPLATE, "converge": True}, 400, "HTTPBadRequest", "converge"),
])
async def test_bad_creates_are_refused_with_heats_fault(api: Client, body: dict[str, Any], status: int,
                                                       error_type: str, message: str) -> None:
    async with api.post("/v1/demo/stacks", json=body) as r:
        assert r.status == status
        fault = await r.json()
    jsonschema.Draft202012Validator(openapi.SCHEMAS["Fault"]).validate(fault)
    assert fault["error"]["type"] == error_type and message in fault["error"]["message"]
    async with api.get("/v1/demo/stacks") as r:
        assert (await r.json())["stacks"] == []  # nothing half-written


async def test_paging_by_marker_and_actions(api: Client) -> None:
    ids = []
    for i in range(3):
        async with api.post("/v1/demo/stacks", json={"stack_name": f"s{i}", "template": TEMPLATE}) as r:
            ids.append((await r.json())["stack"]["id"])
    async with api.get("/v1/demo/stacks?limit=2&sort_dir=asc&sort_keys=stack_name&with_count=true") as r:
        page = await r.json()
    assert [s["stack_name"] for s in page["stacks"]] == ["s0", "s1"] and page["count"] == 3
    async with api.get(f"/v1/demo/stacks?limit=2&sort_dir=asc&sort_keys=stack_name&marker={ids[1]}") as r:
        assert [s["stack_name"] for s in (await r.json())["stacks"]] == ["s2"]
    path = f"/v1/demo/stacks/s0/{ids[0]}"
    await settled(api, path, "CREATE_COMPLETE")
    async with api.post(f"{path}/actions", json={"suspend": None}) as r:
        assert r.status == 200
    await settled(api, path, "SUSPEND_COMPLETE")
    async with api.post(f"{path}/actions", json={"resume": None, "check": None}) as r:
        assert r.status == 400
    async with api.post(f"{path}/actions", json={"explode": None}) as r:
        assert r.status == 400
    async with api.get(f"/v1/demo/stacks/s0/{uuid.uuid4()}") as r:
        assert r.status == 404


async def test_events_stream_as_they_are_written_and_resume_after_the_last_seen(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "live", "template": TEMPLATE}) as r:
        path = f"/v1/demo/stacks/live/{(await r.json())['stack']['id']}"
    seen: list[tuple[str, str, str]] = []
    async with api.get(f"{path}/events/stream?until=settled") as r:
        assert r.status == 200 and r.headers["Content-Type"].startswith("text/event-stream")
        text = (await r.text()).strip()  # ends by itself once the stack settles
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
        event = json.loads(fields["data"])
        assert fields["event"] == "event" and fields["id"] == event["id"]
        seen.append((fields["id"], event["resource_name"], event["resource_status"]))
    assert seen[0][1:] == ("live", "CREATE_IN_PROGRESS")
    assert seen[-1][1:] == ("live", "CREATE_COMPLETE")
    async with api.get(f"{path}/events?sort_dir=asc") as r:
        assert [e["id"] for e in (await r.json())["events"]] == [s[0] for s in seen]

    # A reconnect after the fourth event gets the rest, then the update's events as they come.
    async with api.patch(path, json={"parameters": {"word": "again"}}) as r:
        assert r.status == 202
    async with api.get(f"{path}/events/stream?until=settled", headers={"Last-Event-ID": seen[3][0]}) as r:
        text = await r.text()
    ids = [line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("id: ")]
    assert ids[:len(seen) - 4] == [s[0] for s in seen[4:]]
    assert '"resource_status":"UPDATE_COMPLETE"' in text.strip().split("\n\n")[-1]
    # Asked again after the end, the stream of a settled stack ends at once.
    async with api.get(f"{path}/events/stream?until=settled", headers={"Last-Event-ID": ids[-1]}) as r:
        assert r.status == 200 and (await r.text()) == ""


async def test_request_size_limits(settings: Settings,
                                   aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    small = dataclasses.replace(settings, api=dataclasses.replace(settings.api, max_json_body_size=4096,
                                                                  max_template_size=2048))
    api = await aiohttp_client(make_app(small))
    big = {"stack_name": "big", "template": {**TEMPLATE, "description": "x" * 5000}}
    async with api.post("/v1/demo/stacks", json=big) as r:
        assert r.status == 400
        fault = await r.json()
    assert fault["error"]["type"] == "RequestLimitExceeded"
    assert fault["error"]["message"].startswith("Request limit exceeded: JSON body size (")
    medium = {"stack_name": "medium", "template": {**TEMPLATE, "description": "x" * 2500}}
    async with api.post("/v1/demo/stacks", json=medium) as r:
        assert r.status == 400
        assert (await r.json())["error"]["message"].startswith("Request limit exceeded: Template size")


async def test_nested_stacks_through_the_api(api: Client) -> None:
    child = ("heat_template_version: 2016-10-14\nresources:\n"
             "  inner: {type: OS::Heat::TestResource, properties: {value: deep}}\n")
    template = {"heat_template_version": "2016-10-14",
                "resources": {"nest": {"type": "OS::Heat::Stack", "properties": {"template": child}}}}
    async with api.post("/v1/demo/stacks", json={"stack_name": "outer", "template": template}) as r:
        path = f"/v1/demo/stacks/outer/{(await r.json())['stack']['id']}"
    await settled(api, path, "CREATE_COMPLETE")
    async with api.get(f"{path}/resources?nested_depth=1") as r:
        listed = {x["resource_name"]: x for x in (await r.json())["resources"]}
    nest, inner = listed["nest"], listed["inner"]
    nested_link = next(link["href"] for link in nest["links"] if link["rel"] == "nested")
    assert "/stacks/outer-nest-" in nested_link and nested_link.endswith(f"/{nest['physical_resource_id']}")
    assert inner["parent_resource"] == "nest"
    assert next(link["href"] for link in inner["links"] if link["rel"] == "stack") == nested_link
    async with api.get(f"{path}/resources") as r:
        assert [x["resource_name"] for x in (await r.json())["resources"]] == ["nest"]

    async with api.get(f"{path}/events?nested_depth=1&sort_dir=asc") as r:
        listed_events = (await r.json())["events"]
    assert ("inner", "CREATE_COMPLETE") in [(e["resource_name"], e["resource_status"]) for e in listed_events]
    assert all(any(link["rel"] == "root_stack" for link in e["links"]) for e in listed_events)

    async with api.get("/v1/demo/stacks") as r:
        assert [s["stack_name"] for s in (await r.json())["stacks"]] == ["outer"]
    async with api.get("/v1/demo/stacks?show_nested=true") as r:
        shown = {s["stack_name"]: s for s in (await r.json())["stacks"]}
    nested_name = nested_link.split("/")[-2]
    assert set(shown) == {"outer", nested_name}
    assert shown[nested_name]["parent"] == path.rsplit("/", maxsplit=1)[-1]


async def test_snapshot_then_restore_brings_back_what_was_removed(api: Client) -> None:
    with_secret: dict[str, Any] = {"heat_template_version": "2016-10-14", "resources": {
        "secret": {"type": "OS::Heat::RandomString", "properties": {"length": 24}},
        "keep": {"type": "OS::Heat::TestResource", "properties": {"value": "v"}}},
        "outputs": {"secret": {"value": {"get_attr": ["secret", "value"]}}}}
    async with api.post("/v1/demo/stacks", json={"stack_name": "snappy", "template": with_secret}) as r:
        path = f"/v1/demo/stacks/snappy/{(await r.json())['stack']['id']}"
    created = await settled(api, path, "CREATE_COMPLETE")
    secret = created["outputs"][0]["output_value"]
    async with api.post(f"{path}/snapshots", json={"name": "before"}) as r:
        assert r.status == 200
        snapshot = await r.json()
    _conforms("POST", f"{openapi.S}/snapshots", snapshot)
    assert snapshot["name"] == "before" and snapshot["status"] == "COMPLETE"
    assert snapshot["data"]["resources"]["secret"]["resource_data"]["value"] == secret
    await settled(api, path, "SNAPSHOT_COMPLETE")

    without = {**with_secret, "resources": {"keep": with_secret["resources"]["keep"]}, "outputs": {}}
    async with api.put(path, json={"template": without}) as r:
        assert r.status == 202
    await settled(api, path, "UPDATE_COMPLETE")
    async with api.post(f"{path}/snapshots/{snapshot['id']}/restore") as r:
        assert r.status == 202
    restored = await settled(api, path, "RESTORE_COMPLETE")
    assert restored["outputs"][0]["output_value"] == secret  # the same random value again

    async with api.get(f"{path}/snapshots") as r:
        assert [s["name"] for s in (await r.json())["snapshots"]] == ["before"]
    async with api.delete(f"{path}/snapshots/{snapshot['id']}") as r:
        assert r.status == 204
    async with api.get(f"{path}/snapshots/{snapshot['id']}") as r:
        assert r.status == 404

    slow = {"heat_template_version": "2016-10-14", "resources": {
        "slow": {"type": "OS::Heat::TestResource", "properties": {"wait_secs": 30}}}}
    async with api.post("/v1/demo/stacks", json={"stack_name": "busy", "template": slow}) as r:
        busy = f"/v1/demo/stacks/busy/{(await r.json())['stack']['id']}"
    async with api.post(f"{busy}/snapshots", json={}) as r:
        assert r.status == 409 and (await r.json())["error"]["type"] == "ActionInProgress"


async def test_a_restore_gives_back_the_data_of_a_resource_replaced_since_the_snapshot(api: Client) -> None:
    def secret_of(length: int) -> dict[str, Any]:
        return {"heat_template_version": "2016-10-14", "resources": {
            "secret": {"type": "OS::Heat::RandomString", "properties": {"length": length}}},
            "outputs": {"secret": {"value": {"get_attr": ["secret", "value"]}}}}
    async with api.post("/v1/demo/stacks", json={"stack_name": "resnap", "template": secret_of(24)}) as r:
        path = f"/v1/demo/stacks/resnap/{(await r.json())['stack']['id']}"
    secret = (await settled(api, path, "CREATE_COMPLETE"))["outputs"][0]["output_value"]
    async with api.post(f"{path}/snapshots", json={"name": "before"}) as r:
        snapshot = await r.json()
    await settled(api, path, "SNAPSHOT_COMPLETE")
    async with api.put(path, json={"template": secret_of(30)}) as r:  # length: a replacement
        assert r.status == 202
    replaced = (await settled(api, path, "UPDATE_COMPLETE"))["outputs"][0]["output_value"]
    assert len(replaced) == 30
    async with api.post(f"{path}/snapshots/{snapshot['id']}/restore") as r:
        assert r.status == 202
    restored = await settled(api, path, "RESTORE_COMPLETE")
    assert restored["outputs"][0]["output_value"] == secret


async def test_abandon_and_adopt_are_off_by_default(api: Client) -> None:
    async with api.post("/v1/demo/stacks", json={"stack_name": "plain", "template": TEMPLATE}) as r:
        path = f"/v1/demo/stacks/plain/{(await r.json())['stack']['id']}"
    async with api.delete(f"{path}/abandon") as r:
        assert r.status == 400 and (await r.json())["error"]["message"] == "Stack Abandon is not supported."
    async with api.post("/v1/demo/stacks", json={"stack_name": "adopted", "adopt_stack_data": "{}"}) as r:
        assert r.status == 400 and (await r.json())["error"]["message"] == "Stack Adopt is not supported."


async def test_abandon_then_adopt_gives_back_the_same_resources(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    enabled = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, enable_stack_abandon=True, enable_stack_adopt=True))
    template = {"heat_template_version": "2016-10-14", "resources": {
        "secret": {"type": "OS::Heat::RandomString"},
        "keep": {"type": "OS::Heat::TestResource", "properties": {"value": "v"}}},
        "outputs": {"secret": {"value": {"get_attr": ["secret", "value"]}}}}
    async with engine(enabled):
        api = await aiohttp_client(make_app(enabled))
        async with api.post("/v1/demo/stacks", json={"stack_name": "leaving", "template": template}) as r:
            path = f"/v1/demo/stacks/leaving/{(await r.json())['stack']['id']}"
        before = await settled(api, path, "CREATE_COMPLETE")
        async with api.get(f"{path}/resources") as r:
            ids = {x["resource_name"]: x["physical_resource_id"] for x in (await r.json())["resources"]}
        async with api.get(f"{path}/export") as r:
            exported = await r.json()
        async with api.delete(f"{path}/abandon") as r:
            assert r.status == 200
            data = await r.json()
        assert data["resources"] == exported["resources"]
        await settled(api, path, "DELETE_COMPLETE")
        async with api.get(f"{path}/events?resource_action=DELETE&resource_name=keep") as r:
            assert (await r.json())["events"] == []  # nothing was deleted in the cloud

        async with api.post("/v1/demo/stacks", json={"stack_name": "back",
                                                     "adopt_stack_data": json.dumps(data)}) as r:
            assert r.status == 201
            back = f"/v1/demo/stacks/back/{(await r.json())['stack']['id']}"
        adopted = await settled(api, back, "ADOPT_COMPLETE")
        assert adopted["outputs"] == before["outputs"]
        async with api.get(f"{back}/resources") as r:
            resources = (await r.json())["resources"]
        assert {x["resource_name"]: x["physical_resource_id"] for x in resources} == ids
        assert {x["resource_status"] for x in resources} == {"ADOPT_COMPLETE"}


async def test_abandon_takes_nested_stacks_along_and_adopt_makes_them_again(
        settings: Settings, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> None:
    enabled = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, enable_stack_abandon=True, enable_stack_adopt=True))
    inner = ("heat_template_version: 2016-10-14\nresources:\n  secret: {type: OS::Heat::RandomString}\n"
             "outputs:\n  secret: {value: {get_attr: [secret, value]}}\n")
    template = {"heat_template_version": "2016-10-14", "resources": {
        "nest": {"type": "OS::Heat::Stack", "properties": {"template": inner}}},
        "outputs": {"secret": {"value": {"get_attr": ["nest", "outputs", "secret"]}}}}
    async with engine(enabled):
        api = await aiohttp_client(make_app(enabled))
        async with api.post("/v1/demo/stacks", json={"stack_name": "outer", "template": template}) as r:
            path = f"/v1/demo/stacks/outer/{(await r.json())['stack']['id']}"
        before = await settled(api, path, "CREATE_COMPLETE")
        async with api.get(f"{path}/resources?nested_depth=1") as r:
            old = {x["resource_name"]: x for x in (await r.json())["resources"]}
        nested_path = next(link["href"] for link in old["nest"]["links"] if link["rel"] == "nested")
        nested_path = nested_path[nested_path.index("/v1/"):]
        async with api.delete(f"{path}/abandon") as r:
            data = await r.json()
        assert data["resources"]["nest"]["resources"]["secret"]["resource_id"] == old["secret"][
            "physical_resource_id"]  # Heat's shape: the nested stack's own abandon data
        await settled(api, path, "DELETE_COMPLETE")
        await settled(api, nested_path, "DELETE_COMPLETE")  # abandoned with its parent
        async with api.get(f"{nested_path}/events?resource_action=DELETE&resource_name=secret") as r:
            assert (await r.json())["events"] == []  # and nothing in it was deleted
        async with api.get("/v1/demo/stacks?show_nested=true") as r:
            assert (await r.json())["stacks"] == []

        async with api.post("/v1/demo/stacks", json={"stack_name": "back",
                                                     "adopt_stack_data": json.dumps(data)}) as r:
            back = f"/v1/demo/stacks/back/{(await r.json())['stack']['id']}"
        adopted = await settled(api, back, "ADOPT_COMPLETE")
        assert adopted["outputs"] == before["outputs"]
        async with api.get(f"{back}/resources?nested_depth=1") as r:
            new = {x["resource_name"]: x for x in (await r.json())["resources"]}
        assert new["secret"]["physical_resource_id"] == old["secret"]["physical_resource_id"]
        assert new["secret"]["resource_status"] == "ADOPT_COMPLETE"
        assert new["nest"]["physical_resource_id"] != old["nest"]["physical_resource_id"]  # a new stack
