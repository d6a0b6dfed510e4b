"""A wait condition completed by a real ``curl`` of its handle's ``curl_cli``, through the api."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from aiohttp.test_utils import TestServer

from libs.config import Settings
from libs.embedded.process import free_port
from services.api.app import make_app
from tests.integration.engine_support import engine
from tests.support import eventually

TEMPLATE = {
    "heat_template_version": "2016-10-14",
    "resources": {
        "handle": {"type": "OS::Heat::WaitConditionHandle"},
        "wait": {"type": "OS::Heat::WaitCondition",
                 "properties": {"handle": {"get_resource": "handle"}, "count": 2, "timeout": 60}},
        "after": {"type": "OS::Heat::Value", "depends_on": ["wait"],
                  "properties": {"value": {"get_attr": ["wait", "data"]}}},
    },
    "outputs": {"data": {"value": {"get_attr": ["after", "value"]}},
                "curl": {"value": {"get_attr": ["handle", "curl_cli"]}}},
}


async def _curl(command: str, body: dict[str, Any]) -> str:
    proc = await asyncio.create_subprocess_shell(f"{command} --data-binary '{json.dumps(body)}'",
                                                 stdout=asyncio.subprocess.PIPE,
                                                 stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_curl_cli_signals_complete_the_wait_and_a_failure_fails_it(
        settings: Settings, aiohttp_server: Callable[..., Awaitable[TestServer]]) -> None:
    port = free_port()
    mine = dataclasses.replace(settings, api_host="127.0.0.1", api_port=port)
    async with engine(mine):
        await aiohttp_server(make_app(mine), port=port)
        base = f"http://127.0.0.1:{port}/v1/demo"
        async with aiohttp.ClientSession() as http:
            async def create(name: str) -> str:
                async with http.post(f"{base}/stacks", json={"stack_name": name, "template": TEMPLATE}) as r:
                    assert r.status == 201
                    return f"{base}/stacks/{name}/{(await r.json())['stack']['id']}"

            async def handle_curl(path: str) -> str | None:
                async with http.get(f"{path}/resources/handle") as r:
                    if r.status == 404:  # not planned yet
                        return None
                    shown = (await r.json())["resource"]
                if shown["resource_status"] != "CREATE_COMPLETE":
                    return None
                return str(shown["attributes"]["curl_cli"])

            async def stack_status(path: str) -> dict[str, Any]:
                async with http.get(path) as r:
                    return dict((await r.json())["stack"])

            path = await create("waits")
            curl = await eventually(lambda: handle_curl(path), timeout=30, what="the handle")
            assert curl.startswith("curl -i -X POST -H 'X-Auth-Token: ") and curl.endswith(
                f"{path}/resources/handle/signal")
            assert "200 OK" in await _curl(curl, {"status": "SUCCESS", "data": "one"})
            assert (await stack_status(path))["stack_status"] == "CREATE_IN_PROGRESS"  # one of two
            await _curl(curl, {"status": "SUCCESS", "data": "two", "id": "second"})

            async def settled(at: str) -> dict[str, Any] | None:
                found = await stack_status(at)
                return None if found["stack_status"].endswith("IN_PROGRESS") else found
            done = await eventually(lambda: settled(path), timeout=30, what="the wait")
            assert done["stack_status"] == "CREATE_COMPLETE", done["stack_status_reason"]
            outputs = {o["output_key"]: o["output_value"] for o in done["outputs"]}
            assert json.loads(outputs["data"]) == {"1": "one", "second": "two"}
            signals = f"{path}/events?resource_name=handle&resource_action=SIGNAL&sort_dir=asc"
            async with http.get(signals) as r:
                reasons = [e["resource_status_reason"] for e in (await r.json())["events"]]
            assert reasons == ["Signal: status:SUCCESS reason:Signal 1 received",
                               "Signal: status:SUCCESS reason:Signal second received"]

            failing = await create("fails")
            curl = await eventually(lambda: handle_curl(failing), timeout=30, what="the handle")
            await _curl(curl, {"status": "FAILURE", "reason": "the disk is full"})
            done = await eventually(lambda: settled(failing), timeout=30, what="the failure")
            assert done["stack_status"] == "CREATE_FAILED"
            assert "WaitConditionFailure: resources.wait: the disk is full" in done["stack_status_reason"]
            async with http.post(f"{failing}/resources/handle/signal", json={"status": "MAYBE"}) as r:
                assert r.status == 400
