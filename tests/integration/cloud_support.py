"""A simulated OpenStack for the cloud edge's tests, and the clouds.yaml openstacksdk reads for it."""

from __future__ import annotations

import contextlib
import dataclasses
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from libs.config import CloudSettings
from libs.simcloud import seeds, server
from libs.simcloud.agents import AgentSettings
from libs.simcloud.state import SimSettings
from tests.cloud.support import CloudUnderTest, Conn


@dataclasses.dataclass(frozen=True)
class Sim:
    url: str
    clouds_yaml: Path
    password: str

    def settings(self, **changes: Any) -> CloudSettings:
        base = CloudSettings(config_file=self.clouds_yaml, default="simcloud", threads=4, retries=3,
                             retry_seconds=0.01, request_timeout=30.0)
        return dataclasses.replace(base, **changes)

    def connect(self) -> Conn:
        """An openstacksdk connection to it as ``demo``, as an operator would read it."""
        return CloudUnderTest(kind="sim", clouds_yaml=self.clouds_yaml, member="simcloud",
                              admin="simcloud-admin").connect()

    async def chaos(self, method: str, path: str, body: Any = None) -> Any:
        async with aiohttp.ClientSession() as http, http.request(
                method, f"{self.url}/chaos{path}", json=body) as response:
            response.raise_for_status()
            return await response.json() if response.content_type == "application/json" else None


def write_clouds_yaml(path: Path, url: str, password: str) -> None:
    auth = {"auth_url": f"{url}/identity", "username": "demo", "password": password, "project_name": "demo",
            "user_domain_name": "Default", "project_domain_name": "Default"}
    entry = {"auth": auth, "region_name": "RegionOne", "identity_api_version": 3}
    # A second entry for the same cloud as admin, for the tests of several targets.
    admin = {**entry, "auth": {**auth, "username": "admin", "project_name": "admin"}}
    path.write_text(yaml.safe_dump({"clouds": {"simcloud": entry, "simcloud-admin": admin}}))


@contextlib.asynccontextmanager
async def simulated_cloud(database_url: str, directory: Path, settings: SimSettings | None = None,
                          agents: AgentSettings | None = None) -> AsyncIterator[Sim]:
    """The simulator on a free port, with a fresh password for ``demo`` and ``admin`` (and with an
    agent per server booted for software config, when ``agents`` says where)."""
    password = "pw-" + secrets.token_hex(12)
    options = server.Options(database_url=database_url, port=0, settings=settings or SimSettings(),
                             credentials=seeds.Credentials(admin_password=password, demo_password=password),
                             agents=agents)
    async with server.running(options) as url:
        clouds_yaml = directory / "clouds.yaml"
        write_clouds_yaml(clouds_yaml, url, password)
        yield Sim(url, clouds_yaml, password)
