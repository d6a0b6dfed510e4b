"""Where everything of the one-machine OpenStack lives: paths, ports, databases, pins.

Pure: read from the environment once (:func:`from_env`), then only data. Nothing of
it lies inside the repository: the venv and the services' state go under a data
directory of their own (``EMBER_OPENSTACK_DIR``).
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping
from pathlib import Path

# The PyPI releases that run (one venv holds all six). Bumping one is a new install.
PINS: tuple[str, ...] = (
    "keystone==30.0.0",
    "glance==33.0.0",
    "openstack-placement==16.0.0",
    "nova==34.0.0",
    "neutron==29.0.0",
    "cinder==29.0.0",
    "gunicorn==27.0.1",
    "PyMySQL==1.2.4",
    "python-memcached==1.62",
)

HOST = "127.0.0.1"
REGION = "RegionOne"
# Nova's compute node and Cinder's volume host: one name, this machine.
COMPUTE_HOST = "ember-os"


class Api(enum.StrEnum):
    """The HTTP services, each a WSGI app under its own gunicorn."""

    KEYSTONE = "keystone"
    GLANCE = "glance"
    PLACEMENT = "placement"
    NOVA = "nova"
    NEUTRON = "neutron"
    CINDER = "cinder"


# Each API's port (the usual ones, so a person's habits hold) and its catalog entry.
PORTS: Mapping[Api, int] = {
    Api.KEYSTONE: 5000,
    Api.GLANCE: 9292,
    Api.PLACEMENT: 8778,
    Api.NOVA: 8774,
    Api.NEUTRON: 9696,
    Api.CINDER: 8776,
}


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    service_type: str
    name: str
    path: str  # after http://HOST:PORT


CATALOG: Mapping[Api, CatalogEntry] = {
    Api.GLANCE: CatalogEntry("image", "glance", ""),
    Api.PLACEMENT: CatalogEntry("placement", "placement", ""),
    Api.NOVA: CatalogEntry("compute", "nova", "/v2.1"),
    Api.NEUTRON: CatalogEntry("network", "neutron", ""),
    Api.CINDER: CatalogEntry("block-storage", "cinder", "/v3/%(project_id)s"),
}

# Databases of each service (without the prefix).
DATABASES: Mapping[Api, tuple[str, ...]] = {
    Api.KEYSTONE: ("keystone",),
    Api.GLANCE: ("glance",),
    Api.PLACEMENT: ("placement",),
    Api.NOVA: ("nova_api", "nova", "nova_cell0"),
    Api.NEUTRON: ("neutron",),
    Api.CINDER: ("cinder",),
}


class Daemon(enum.StrEnum):
    """The non-HTTP processes: console scripts of the venv."""

    NOVA_CONDUCTOR = "nova-conductor"
    NOVA_SCHEDULER = "nova-scheduler"
    NOVA_COMPUTE = "nova-compute"
    CINDER_SCHEDULER = "cinder-scheduler"
    CINDER_VOLUME = "cinder-volume"


@dataclasses.dataclass(frozen=True)
class Layout:
    data: Path
    db_prefix: str
    mysql: str  # user[:password]@host:port
    rabbit: str  # user:password@host:port[/vhost]
    member_cloud: str = "ember-os"
    admin_cloud: str = "ember-os-admin"

    @property
    def venv(self) -> Path:
        return self.data / "venv"

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    @property
    def etc(self) -> Path:
        return self.data / "etc"

    @property
    def logs(self) -> Path:
        return self.data / "logs"

    @property
    def run(self) -> Path:
        return self.data / "run"

    @property
    def state(self) -> Path:
        return self.data / "state"

    @property
    def stamps(self) -> Path:
        return self.data / "stamps"

    @property
    def clouds_yaml(self) -> Path:
        return self.data / "clouds.yaml"

    @property
    def secrets(self) -> Path:
        return self.data / "secrets.json"

    def database(self, name: str) -> str:
        return f"{self.db_prefix}{name}"

    def all_databases(self) -> list[str]:
        return [self.database(name) for names in DATABASES.values() for name in names]

    def db_url(self, name: str) -> str:
        return f"mysql+pymysql://{self.mysql}/{self.database(name)}?charset=utf8"

    @property
    def transport_url(self) -> str:
        return f"rabbit://{self.rabbit}"

    @property
    def mysql_host_port(self) -> tuple[str, int]:
        host, _, port = self.mysql.rpartition("@")[2].partition(":")
        return host, int(port or 3306)

    @property
    def rabbit_host_port(self) -> tuple[str, int]:
        host, _, port = self.rabbit.rpartition("@")[2].split("/")[0].partition(":")
        return host, int(port or 5672)


def url(api: Api) -> str:
    return f"http://{HOST}:{PORTS[api]}"


def keystone_url() -> str:
    return f"{url(Api.KEYSTONE)}/v3"


def default_data_dir() -> Path:
    return Path.home() / ".cache" / "ember-openstack"


def from_env(env: Mapping[str, str] | None = None) -> Layout:
    """The layout the environment asks for (defaults: the machine's MariaDB and RabbitMQ)."""
    env = os.environ if env is None else env
    return Layout(
        data=Path(env.get("EMBER_OPENSTACK_DIR") or default_data_dir()).expanduser().resolve(),
        db_prefix=env.get("EMBER_OPENSTACK_DB_PREFIX", "ember_os_"),
        mysql=env.get("EMBER_OPENSTACK_MYSQL", "root@127.0.0.1:3306"),
        rabbit=env.get("EMBER_OPENSTACK_RABBIT", "guest:guest@127.0.0.1:5672/"),
    )
