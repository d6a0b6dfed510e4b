"""``openstack software config|deployment ...`` against Ember print what they printed against Heat.

The transcript of one session (``tests/integration/software_cli.py``) is compared command by
command with real Heat's (``data/software_cli_heat.json``, recorded by
``scripts/heat_reference/record_software_cli.py``): exit codes, what each printed, its errors.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from libs.config import Settings
from libs.resources.registry import default_registry
from services.api.app import make_app
from tests.integration.clients import Osc
from tests.integration.software_cli import HEAT_TRANSCRIPT, api, ids_in, session

MakeServer = Callable[[web.Application], Awaitable[TestServer]]


async def _endpoint(settings: Settings, aiohttp_server: MakeServer) -> str:
    server = await aiohttp_server(make_app(settings))
    return str(server.make_url("/v1/demo"))


async def test_the_software_commands_print_what_they_print_against_heat(
        settings: Settings, aiohttp_server: MakeServer, tmp_path: Path) -> None:
    endpoint = await _endpoint(settings, aiohttp_server)
    osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": endpoint}, tmp_path)
    transcript = await asyncio.to_thread(session, osc, endpoint)
    assert not ids_in(transcript)
    heat = json.loads(HEAT_TRANSCRIPT.read_text())["steps"]
    assert [s["command"] for s in transcript] == [s["command"] for s in heat]
    for ours, theirs in zip(transcript, heat, strict=True):
        assert ours == theirs, f"openstack {ours['command']}"


def _registered(type_name: str) -> bool:
    return type_name in default_registry().types()


# The client validates a template holding the config as an OS::Heat::SoftwareConfig before it
# stores it (a Heat without a Keystone catalog refuses that type, so no recording of Heat's).
@pytest.mark.xfail(not _registered("OS::Heat::SoftwareConfig"), strict=True,
                   reason="OS::Heat::SoftwareConfig is registered by the resource types of issue 17")
async def test_openstack_software_config_create_stores_the_files_it_is_given(
        settings: Settings, aiohttp_server: MakeServer, tmp_path: Path) -> None:
    endpoint = await _endpoint(settings, aiohttp_server)
    osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": endpoint}, tmp_path)
    (tmp_path / "script.sh").write_text("#!/bin/sh\necho hello $word\n")
    (tmp_path / "defn.yaml").write_text("inputs:\n- name: word\n  default: world\noutputs:\n- name: result\n"
                                        "options: {timeout: 10}\n")
    made = await asyncio.to_thread(osc.json, "software", "config", "create", "--config-file", "script.sh",
                                   "--definition-file", "defn.yaml", "--group", "script", "made-by-cli")
    shown = await asyncio.to_thread(api, endpoint, "GET", f"/software_configs/{made['id']}")
    assert {k: made[k] for k in ("name", "group", "config", "inputs", "outputs", "options")} == {
        "name": "made-by-cli", "group": "script", "config": "#!/bin/sh\necho hello $word\n",
        "inputs": [{"name": "word", "type": "String", "default": "world"}],
        "outputs": [{"name": "result", "type": "String", "error_output": False}], "options": {"timeout": 10}}
    assert shown == {"software_config": made}
