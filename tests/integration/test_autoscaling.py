"""Auto scaling groups scaled by a policy's signal URL, by a NATS request and by the template."""

from __future__ import annotations

import dataclasses
import functools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import nats
from aiohttp.test_utils import TestServer

from libs.config import Settings
from libs.db import resources
from libs.embedded.process import free_port
from libs.messaging.payloads import ScaleReply, ScaleRequest, decode
from libs.messaging.subjects import Names
from services.api.app import make_app
from tests.integration.engine_support import engine
from tests.support import eventually


def _template(desired: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {
        "asg": {"type": "OS::Heat::AutoScalingGroup", "properties": {
            "min_size": 1, "max_size": 5, "desired_capacity": desired,
            "resource": {"type": "OS::Heat::TestResource", "properties": {"value": "m"}}}},
        "up": {"type": "OS::Heat::ScalingPolicy", "properties": {
            "auto_scaling_group_id": {"get_resource": "asg"}, "adjustment_type": "change_in_capacity",
            "scaling_adjustment": 2}},
        "slow": {"type": "OS::Heat::ScalingPolicy", "properties": {
            "auto_scaling_group_id": {"get_resource": "asg"}, "adjustment_type": "change_in_capacity",
            "scaling_adjustment": 1, "cooldown": 600}}},
        "outputs": {"size": {"value": {"get_attr": ["asg", "current_size"]}},
                    "url": {"value": {"get_attr": ["up", "signal_url"]}},
                    "slow_url": {"value": {"get_attr": ["slow", "alarm_url"]}}}}


async def _ask(settings: Settings, group: str, request: ScaleRequest) -> ScaleReply:
    """A NATS request, as an integration sends one."""
    client = await nats.connect(settings.nats_url or "")
    try:
        answer = await client.request(Names(settings.nats_prefix).scale("demo", "scaled", group),
                                      request.to_bytes(), timeout=10)
    finally:
        await client.close()
    reply = decode(answer.data)
    assert isinstance(reply, ScaleReply)
    return reply


async def test_scaling_by_signal_url_nats_request_and_template(
        settings: Settings, aiohttp_server: Callable[..., Awaitable[TestServer]]) -> None:
    port = free_port()
    mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port)
    base = f"http://127.0.0.1:{port}/v1/demo"
    async with engine(mine) as rt, aiohttp.ClientSession() as http:
        await aiohttp_server(make_app(mine), port=port)
        async with http.post(f"{base}/stacks", json={"stack_name": "scaled", "template": _template(2)}) as r:
            stack_id = (await r.json())["stack"]["id"]
        path = f"{base}/stacks/scaled/{stack_id}"

        async def outputs(status: str, size: int | None = None) -> dict[str, Any] | None:
            async with http.get(path) as r:
                stack = (await r.json())["stack"]
            if stack["stack_status"] != status:
                return None
            found = {o["output_key"]: o["output_value"] for o in stack.get("outputs") or []}
            return found if size is None or found.get("size") == size else None

        async def members() -> list[str]:
            async with rt.pool.acquire() as conn:
                rows = await resources.for_stack(conn, uuid.UUID(str(group["physical_resource_id"])))
            return sorted(r.name for r in rows if r.is_current)

        created = await eventually(lambda: outputs("CREATE_COMPLETE", 2), timeout=60, what="create")
        assert created["url"] == f"{path}/resources/up/signal" == created["slow_url"].replace("slow", "up")
        async with http.get(f"{path}/resources/asg") as r:
            group = (await r.json())["resource"]
        first = await members()
        assert len(first) == 2 and all(len(n) == 12 for n in first)

        async with http.post(created["url"], json={}) as r:  # the policy's signal URL: +2
            assert r.status == 200
        await eventually(lambda: outputs("CREATE_COMPLETE", 4), timeout=60, what="scale up to 4")
        assert set(first) <= set(await members())

        assert await _ask(mine, "asg", ScaleRequest(capacity=1)) == ScaleReply(capacity=1)
        await eventually(lambda: outputs("CREATE_COMPLETE", 1), timeout=60, what="scale to 1")
        refused = await _ask(mine, "nope", ScaleRequest(adjust=1))
        assert "no auto scaling group nope" in refused.error
        assert len(await members()) == 1

        # Within its cooldown, a policy's second signal changes nothing.
        async with http.post(created["slow_url"], json={}) as r:
            assert r.status == 200
        await eventually(lambda: outputs("CREATE_COMPLETE", 2), timeout=60, what="slow policy")
        async with http.post(created["slow_url"], json={}) as r:
            assert r.status == 200
        async with http.get(f"{path}/resources/asg") as r:
            assert (await r.json())["resource"]["resource_status"] == "CREATE_COMPLETE"
        assert len(await members()) == 2

        # The template's desired_capacity wins only when the template changes it.
        async with http.put(path, json={"template": _template(2)}) as r:
            assert r.status == 202
        assert (await eventually(lambda: outputs("UPDATE_COMPLETE"), timeout=60, what="same"))["size"] == 2
        async with http.put(path, json={"template": _template(3)}) as r:
            assert r.status == 202
        await eventually(lambda: outputs("UPDATE_COMPLETE", 3), timeout=60, what="desired 3")


def _cooling_template(cooldown: int) -> dict[str, Any]:
    return {"heat_template_version": "2016-10-14", "resources": {
        "asg": {"type": "OS::Heat::AutoScalingGroup", "properties": {
            "min_size": 1, "max_size": 3, "cooldown": cooldown,
            "resource": {"type": "OS::Heat::Value", "properties": {"value": "m"}}}},
        "up": {"type": "OS::Heat::ScalingPolicy", "properties": {
            "auto_scaling_group_id": {"get_resource": "asg"}, "adjustment_type": "change_in_capacity",
            "scaling_adjustment": 1}}},
        "outputs": {"size": {"value": {"get_attr": ["asg", "current_size"]}}}}


async def test_the_cooldown_starts_when_the_group_is_created_or_updated(
        settings: Settings, aiohttp_client: Callable[..., Awaitable[Any]]) -> None:
    # Heat's AutoScalingGroup.check_create_complete and check_update_complete start the
    # cooldown (aws/autoscaling/autoscaling_group.py); the reference Heat on this machine
    # cannot scale at all (no service catalog to inspect the group), so no recording.
    async with engine(settings):
        client = await aiohttp_client(make_app(settings))

        async def stack(name: str, status: str, size: int) -> dict[str, Any] | None:
            async with client.get(f"/v1/demo/stacks/{name}") as r:
                shown = (await r.json())["stack"]
            sizes = [o["output_value"] for o in shown.get("outputs") or [] if o["output_key"] == "size"]
            return shown if shown["stack_status"] == status and sizes == [size] else None

        async def scalings(name: str) -> list[str]:
            async with client.get(f"/v1/demo/stacks/{name}/events?resource_name=asg") as r:
                return [e["resource_status_reason"] for e in (await r.json())["events"]
                        if e["resource_status_reason"].startswith("Scaling from")]

        ids: dict[str, str] = {}

        async def signal(name: str) -> None:  # (a redirected POST would become a GET)
            async with client.post(f"/v1/demo/stacks/{name}/{ids[name]}/resources/up/signal", json={}) as r:
                assert r.status == 200

        for name, cooldown in (("cool", 600), ("warm", 0)):
            async with client.post("/v1/demo/stacks", json={"stack_name": name,
                                                            "template": _cooling_template(cooldown)}) as r:
                assert r.status == 201
                ids[name] = (await r.json())["stack"]["id"]
        for name in ids:
            await eventually(functools.partial(stack, name, "CREATE_COMPLETE", 1), timeout=60, what=name)

        await signal("cool")  # within the cooldown its create started: nothing changes
        assert await scalings("cool") == []
        await signal("warm")
        assert await scalings("warm") == ["Scaling from 1 to 2"]
        await eventually(lambda: stack("warm", "CREATE_COMPLETE", 2), timeout=60, what="warm scaled")

        async with client.put("/v1/demo/stacks/warm", json={"template": _cooling_template(600)}) as r:
            assert r.status == 202
        await eventually(lambda: stack("warm", "UPDATE_COMPLETE", 2), timeout=60, what="warm updated")
        await signal("warm")  # within the cooldown the update started
        assert await scalings("warm") == ["Scaling from 1 to 2"]
        assert await stack("warm", "UPDATE_COMPLETE", 2) is not None
