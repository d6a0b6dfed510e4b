"""The one-machine OpenStack's pure parts: its layout from the environment and the configs it writes."""

from __future__ import annotations

import configparser
from pathlib import Path

import pytest

from scripts.openstack_one_machine import configs
from scripts.openstack_one_machine.credentials import PEOPLE, SERVICE_USERS, Credentials
from scripts.openstack_one_machine.layout import Layout, from_env

LAYOUT = Layout(data=Path("/data"), db_prefix="p_", mysql="root@127.0.0.1:3306",
                rabbit="guest:guest@127.0.0.1:5672/")
CREDS = Credentials({user: f"pw-{user}" for user in (*PEOPLE, *SERVICE_USERS)})


@pytest.mark.parametrize(("env", "mysql", "rabbit", "prefix"), [
    ({}, ("127.0.0.1", 3306), ("127.0.0.1", 5672), "ember_os_"),
    ({"EMBER_OPENSTACK_MYSQL": "u:pw@db.local:3307", "EMBER_OPENSTACK_DB_PREFIX": "x_"},
     ("db.local", 3307), ("127.0.0.1", 5672), "x_"),
    ({"EMBER_OPENSTACK_RABBIT": "a:b@mq:5673/ember"}, ("127.0.0.1", 3306), ("mq", 5673), "ember_os_"),
    ({"EMBER_OPENSTACK_RABBIT": "a:b@mq/"}, ("127.0.0.1", 3306), ("mq", 5672), "ember_os_"),
])
def test_layout_from_env(env: dict[str, str], mysql: tuple[str, int], rabbit: tuple[str, int],
                         prefix: str) -> None:
    layout = from_env(env)
    assert (layout.mysql_host_port, layout.rabbit_host_port, layout.db_prefix) == (mysql, rabbit, prefix)
    assert all(name.startswith(prefix) for name in layout.all_databases())


def test_databases_are_the_prefixed_names_only() -> None:
    assert LAYOUT.all_databases() == ["p_keystone", "p_glance", "p_placement", "p_nova_api", "p_nova",
                                      "p_nova_cell0", "p_neutron", "p_cinder"]
    assert LAYOUT.db_url("nova") == "mysql+pymysql://root@127.0.0.1:3306/p_nova?charset=utf8"


def _parsed(text: str) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parser


def test_render_writes_ini_with_oslo_booleans() -> None:
    parsed = _parsed(configs.render({"a": {"flag": True, "n": 3, "s": "x"}}))
    assert dict(parsed["a"]) == {"flag": "true", "n": "3", "s": "x"}


def test_every_service_notifies_nothing() -> None:
    """Notifications nobody reads would fill RabbitMQ's queues."""
    for path, text in configs.files(LAYOUT, CREDS).items():
        if path.name == "ml2_conf.ini":
            continue
        assert _parsed(text)["oslo_messaging_notifications"]["driver"] == "noop", path


def test_nova_compute_has_no_database() -> None:
    """nova-compute refuses to start with database settings ("No DB access allowed")."""
    compute = _parsed(configs.render(configs.nova_compute(LAYOUT, CREDS)))
    nova = _parsed(configs.render(configs.nova(LAYOUT, CREDS)))
    assert not {"database", "api_database"} & set(compute.sections())
    assert nova["database"]["connection"].endswith("/p_nova?charset=utf8")
    assert compute["DEFAULT"]["compute_driver"] == "fake.FakeDriverWithoutFakeNodes"


def test_neutron_binds_ports_with_our_driver_and_no_agent() -> None:
    ml2 = _parsed(configs.render(configs.ml2()))
    assert ml2["ml2"]["mechanism_drivers"] == "ember_bind_all"
    neutron = _parsed(configs.render(configs.neutron(LAYOUT, CREDS)))
    assert neutron["DEFAULT"]["dhcp_agent_notification"] == "false"


def test_service_users_authenticate_with_their_own_passwords() -> None:
    for service, render in (("glance", configs.glance), ("nova", configs.nova), ("cinder", configs.cinder),
                            ("neutron", configs.neutron), ("placement", configs.placement)):
        auth = _parsed(configs.render(render(LAYOUT, CREDS)))["keystone_authtoken"]
        assert (auth["username"], auth["password"]) == (service, f"pw-{service}")
