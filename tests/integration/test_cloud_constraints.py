"""Custom constraints checked against the cloud when a stack is created, through the api and the simulator."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from libs.cloud.caller import CloudTarget
from libs.cloud.calls import CloudCall, Service
from libs.cloud.sdk import SdkCaller
from libs.config import Settings
from services.api.app import make_app
from services.api.keys import SETTINGS
from tests.integration.cloud_support import simulated_cloud
from tests.integration.engine_support import engine

Client = TestClient[web.Request, web.Application]


def _template() -> dict[str, Any]:
    cloud = {name: {"type": "string", "constraints": [{"custom_constraint": constraint}]}
             for name, constraint in (("flavor", "nova.flavor"), ("image", "glance.image"),
                                      ("key", "nova.keypair"))}
    return {"heat_template_version": "2018-08-31", "parameters": cloud,
            "resources": {"nothing": {"type": "OS::Heat::None"}}}


@pytest.fixture
async def api(settings: Settings, database_url: str, tmp_path: Path,
              aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> AsyncIterator[Client]:
    async with simulated_cloud(database_url, tmp_path) as sim:
        with_cloud = dataclasses.replace(settings, cloud=sim.settings())
        async with engine(with_cloud):
            yield await aiohttp_client(make_app(with_cloud))


async def _create(api: Client, name: str, **parameters: str) -> tuple[int, Any]:
    async with api.post("/v1/demo/stacks", json={"stack_name": name, "template": _template(),
                                                 "parameters": parameters}) as response:
        return response.status, await response.json()


async def test_values_the_cloud_lacks_fail_with_heats_messages(api: Client) -> None:
    good = {"flavor": "m1.tiny", "image": "cirros", "key": ""}
    status, body = await _create(api, "fine", **good)
    assert status == 201, body
    fine = body["stack"]["id"]
    cases = [
        ({**good, "flavor": "m1.huge"}, "Parameter 'flavor' is invalid: Error validating value 'm1.huge': "
                                        "No Flavor matching {'name': 'm1.huge'}. (HTTP 404)"),
        ({**good, "image": "fedora"}, "Parameter 'image' is invalid: Error validating value 'fedora': "
                                      "No images matching {'name': 'fedora'}."),
        ({**good, "key": "nokey"}, "Parameter 'key' is invalid: Error validating value 'nokey': "
                                   "The Key (nokey) could not be found."),
    ]
    for number, (parameters, message) in enumerate(cases):
        status, body = await _create(api, f"bad{number}", **parameters)
        assert status == 400, body
        assert body["error"]["type"] == "StackValidationFailed"
        assert body["error"]["message"] == message
    # An update is checked the same way.
    async with api.put(f"/v1/demo/stacks/fine/{fine}", json={
            "template": _template(), "parameters": {**good, "flavor": "m1.huge"}}) as response:
        assert response.status == 400
        assert (await response.json())["error"]["message"] == cases[0][1]
    # And a create preview.
    previewed = {"stack_name": "seen", "template": _template(), "parameters": {**good, "image": "fedora"}}
    async with api.post("/v1/demo/stacks/preview", json=previewed) as response:
        assert response.status == 400
        assert (await response.json())["error"]["message"] == cases[1][1]
    async with api.post("/v1/demo/stacks/preview", json={
            "stack_name": "seen", "template": _template(), "parameters": good}) as response:
        assert response.status == 200, await response.text()


async def test_network_and_volume_values_are_looked_up_too(api: Client) -> None:
    pytest.importorskip("libs.simcloud.neutron")
    pytest.importorskip("libs.simcloud.cinder")
    names = {"network": "neutron.network", "subnet": "neutron.subnet", "group": "neutron.security_group",
             "vtype": "cinder.vtype", "volume": "cinder.volume"}
    template = {"heat_template_version": "2018-08-31",
                "parameters": {name: {"type": "string", "constraints": [{"custom_constraint": constraint}]}
                               for name, constraint in names.items()},
                "resources": {"nothing": {"type": "OS::Heat::None"}}}
    settings = api.app[SETTINGS].cloud
    caller = SdkCaller(settings)
    try:
        made = await caller.call(CloudTarget("simcloud"), [
            CloudCall("volume", Service.BLOCK_STORAGE, "create_volume", kwargs={"size": 1, "name": "v"})])
    finally:
        await caller.close()
    volume = made["volume"].value["id"]
    good = {"network": "private", "subnet": "private-subnet", "group": "default", "vtype": "__DEFAULT__",
            "volume": volume}
    cases = [
        (good, None),
        ({**good, "network": "nonet"}, "Parameter 'network' is invalid: Error validating value 'nonet': "
                                       "Unable to find network with name or id 'nonet'"),
        ({**good, "subnet": "nosub"}, "Parameter 'subnet' is invalid: Error validating value 'nosub': "
                                      "Unable to find subnet with name or id 'nosub'"),
        ({**good, "group": "web"}, "Parameter 'group' is invalid: Error validating value 'web': "
                                   "Unable to find security_group with name or id 'web'"),
        ({**good, "vtype": "ssd"}, "Parameter 'vtype' is invalid: Error validating value 'ssd': "
                                   "The VolumeType (ssd) could not be found."),
        ({**good, "volume": "v0"}, "Parameter 'volume' is invalid: Error validating value 'v0': "
                                   "The Volume (v0) could not be found."),
    ]
    for number, (parameters, message) in enumerate(cases):
        async with api.post("/v1/demo/stacks", json={"stack_name": f"net{number}", "template": template,
                                                     "parameters": parameters}) as response:
            body = await response.json()
        if message is None:
            assert response.status == 201, body
        else:
            assert response.status == 400, body
            assert body["error"]["message"] == message


async def test_an_update_sending_the_same_request_again_asks_the_cloud_again(api: Client) -> None:
    key = {"type": "string", "constraints": [{"custom_constraint": "nova.keypair"}]}
    template = {"heat_template_version": "2018-08-31", "parameters": {"key": key},
                "resources": {"nothing": {"type": "OS::Heat::None"}}}
    body = {"template": template, "parameters": {"key": "kept"}}
    caller = SdkCaller(api.app[SETTINGS].cloud)
    try:
        await caller.call(CloudTarget("simcloud"), [
            CloudCall("key", Service.COMPUTE, "create_keypair", kwargs={"name": "kept"})])
        async with api.post("/v1/demo/stacks", json={"stack_name": "keyed", **body}) as response:
            assert response.status == 201, await response.text()
            path = f"/v1/demo/stacks/keyed/{(await response.json())['stack']['id']}"
        await caller.call(CloudTarget("simcloud"), [
            CloudCall("gone", Service.COMPUTE, "delete_keypair", args=("kept",))])
    finally:
        await caller.close()
    async with api.put(path, json=body) as response:
        assert response.status == 400
        assert (await response.json())["error"]["message"] == (
            "Parameter 'key' is invalid: Error validating value 'kept': The Key (kept) could not be found.")
