"""Which cloud ``ember dev`` gives Ember: the one configured, else the simulator, with its ``clouds.yaml``.

A cloud is configured when ``OS_CLOUD`` and ``OS_CLIENT_CONFIG_FILE`` are both
set (openstacksdk's own lookup then finds it). Otherwise dev runs ``ember
simcloud`` as one more child on its database (schema ``simcloud``), writes
``<data dir>/clouds.yaml`` with clouds ``simcloud`` (demo) and
``simcloud-admin``, and gives the services ``OS_CLIENT_CONFIG_FILE`` and
``OS_CLOUD=simcloud``. Its port is ``EMBER_SIMCLOUD_BIND``'s, else the one
chosen on the first start (kept in ``<data dir>/simcloud.port``), so the file
stays right across restarts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

import yaml

from libs.embedded.process import free_port
from libs.simcloud.catalog import REGION
from libs.simcloud.seeds import Credentials

CLOUD = "simcloud"
ADMIN_CLOUD = "simcloud-admin"


@dataclasses.dataclass(frozen=True)
class DevAgents:
    """What the simulator's agents are told: Ember's API, the servers' folders, and NATS (its
    prefix, and the users file of an authorizing server) when there is one."""

    api_url: str
    root: Path
    nats_url: str | None = None
    nats_prefix: str | None = None
    nats_users: Path | None = None


@dataclasses.dataclass(frozen=True)
class DevCloud:
    host: str
    port: int
    clouds_yaml: Path
    credentials: Credentials = dataclasses.field(default_factory=Credentials)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """What Ember's services (and the operator's shell) need to find it."""
        return {"OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml), "OS_CLOUD": CLOUD}

    def argv(self, database_url: str, agents: DevAgents | None = None) -> list[str]:
        """``ember`` arguments that run it; ``agents``: for an agent per server booted for software config."""
        argv = ["simcloud", "--bind", f"{self.host}:{self.port}", "--database-url", database_url,
                "--admin-password", self.credentials.admin_password,
                "--demo-password", self.credentials.demo_password]
        if agents is not None:
            argv += ["--agents-api-url", agents.api_url, "--agents-dir", str(agents.root)]
            if agents.nats_url:
                argv += ["--agents-nats-url", agents.nats_url]
                if agents.nats_prefix:
                    argv += ["--agents-nats-prefix", agents.nats_prefix]
                if agents.nats_users is not None:
                    argv += ["--agents-nats-users", str(agents.nats_users)]
        return argv


def configured(env: Mapping[str, str]) -> bool:
    return bool(env.get("OS_CLOUD")) and bool(env.get("OS_CLIENT_CONFIG_FILE"))


def plan(data_dir: Path, env: Mapping[str, str]) -> DevCloud:
    bind = env.get("EMBER_SIMCLOUD_BIND")
    if bind:
        host, _, given = bind.rpartition(":")
        return DevCloud(host or "127.0.0.1", int(given), data_dir / "clouds.yaml")
    remembered = data_dir / "simcloud.port"
    try:
        port = int(remembered.read_text().strip())
    except (OSError, ValueError):
        port = free_port()
        data_dir.mkdir(parents=True, exist_ok=True)
        remembered.write_text(f"{port}\n")
    return DevCloud("127.0.0.1", port, data_dir / "clouds.yaml")


def _entry(cloud: DevCloud, user: str, password: str) -> dict[str, object]:
    return {"auth": {"auth_url": f"{cloud.url}/identity", "username": user, "password": password,
                     "project_name": user, "user_domain_name": "Default", "project_domain_name": "Default"},
            "region_name": REGION, "identity_api_version": 3, "interface": "public"}


def clouds_yaml(cloud: DevCloud) -> str:
    return yaml.safe_dump({"clouds": {
        CLOUD: _entry(cloud, "demo", cloud.credentials.demo_password),
        ADMIN_CLOUD: _entry(cloud, "admin", cloud.credentials.admin_password)}}, sort_keys=False)


def write(cloud: DevCloud) -> None:
    """The file, written whole and readable by its owner only (it holds passwords)."""
    cloud.clouds_yaml.parent.mkdir(parents=True, exist_ok=True)
    staging = cloud.clouds_yaml.with_suffix(".tmp")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(clouds_yaml(cloud))
    staging.replace(cloud.clouds_yaml)
