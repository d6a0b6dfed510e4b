"""`ember dev` runs the simulator unless a cloud is configured, and its clouds.yaml reaches it."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import keystoneauth1.exceptions
import openstack
import pytest
import yaml
from openstack.config.loader import OpenStackConfig
from openstack.connection import Connection

from libs.embedded.process import free_port
from tests.support import Servers, ember, terminate, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture
def data_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="ember-simcloud-dev-"))
    base.chmod(0o755)
    try:
        yield base / "data"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _env(data_dir: Path, servers: Servers, database_url: str, nats_prefix: str,
         **extra: str) -> dict[str, str]:
    return {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{free_port()}",
            "EMBER_SHUTDOWN_GRACE": "5", "EMBER_DATABASE_URL": database_url,
            "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": nats_prefix,
            "OS_CLOUD": "", "OS_CLIENT_CONFIG_FILE": "", **extra}


def _flavors(clouds_yaml: Path, cloud: str) -> list[str] | None:
    try:
        # openstacksdk's own lookup of the file, as the worker's driver reads it.
        region = OpenStackConfig(config_files=[str(clouds_yaml)]).get_one(cloud)
        conn = Connection(config=region)
        return [f.name for f in conn.compute.flavors()]
    except (openstack.exceptions.SDKException, keystoneauth1.exceptions.ClientException, OSError):
        # Not answering yet.
        return None


def test_dev_runs_the_simulator_and_writes_its_clouds_yaml(data_dir: Path, tmp_path: Path, servers: Servers,
                                                           database_url: str, nats_prefix: str) -> None:
    proc = ember(["dev"], _env(data_dir, servers, database_url, nats_prefix), tmp_path / "dev.log")
    try:
        clouds_yaml = data_dir / "clouds.yaml"
        wait_until(clouds_yaml.exists, timeout=60, what="clouds.yaml")
        assert clouds_yaml.stat().st_mode & 0o077 == 0  # it holds passwords
        assert set(yaml.safe_load(clouds_yaml.read_text())["clouds"]) == {"simcloud", "simcloud-admin"}
        flavors = wait_until(lambda: _flavors(clouds_yaml, "simcloud"), timeout=60, interval=0.3,
                             what="the simulator through clouds.yaml")
        assert {"m1.tiny", "m1.small"} <= set(flavors)
        assert _flavors(clouds_yaml, "simcloud-admin")
        wait_until(lambda: "Ember is running." in (tmp_path / "dev.log").read_text(), timeout=60,
                   what="the banner")
        assert "OS_CLOUD=simcloud" in (tmp_path / "dev.log").read_text()
    finally:
        assert terminate(proc) == 0


def test_a_configured_cloud_means_no_simulator(data_dir: Path, tmp_path: Path, servers: Servers,
                                               database_url: str, nats_prefix: str) -> None:
    given = tmp_path / "clouds.yaml"
    given.write_text("clouds: {elsewhere: {auth: {auth_url: 'http://127.0.0.1:9/identity'}}}\n")
    env = _env(data_dir, servers, database_url, nats_prefix, OS_CLOUD="elsewhere",
               OS_CLIENT_CONFIG_FILE=str(given))
    proc = ember(["dev"], env, tmp_path / "dev.log")
    try:
        wait_until(lambda: "Ember is running." in (tmp_path / "dev.log").read_text(), timeout=60,
                   what="the banner")
        assert not (data_dir / "clouds.yaml").exists()
        assert "elsewhere" in (tmp_path / "dev.log").read_text()
    finally:
        assert terminate(proc) == 0
