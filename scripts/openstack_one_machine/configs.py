"""Every service's configuration files, as text: pure functions of the layout and the passwords.

Written fresh on each setup (they are cheap, and a changed layout must reach them).
Notifications are ``noop`` everywhere (nobody reads them; their queues would fill RabbitMQ),
and nova-compute gets a file of its own without database settings (it refuses to start
with them).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from scripts.openstack_one_machine.credentials import Credentials
from scripts.openstack_one_machine.layout import (
    COMPUTE_HOST,
    HOST,
    REGION,
    Api,
    Layout,
    keystone_url,
)

Value = str | int | bool
Ini = Mapping[str, Mapping[str, Value]]


def render(ini: Ini) -> str:
    lines: list[str] = []
    for section, options in ini.items():
        lines.append(f"[{section}]")
        for key, value in options.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            lines.append(f"{key} = {text}")
        lines.append("")
    return "\n".join(lines)


def _service_auth(user: str, creds: Credentials) -> dict[str, Value]:
    """A keystoneauth password section for a service user of project ``service``."""
    return {
        "auth_type": "password",
        "auth_url": keystone_url(),
        "username": user,
        "password": creds.password(user),
        "project_name": "service",
        "user_domain_name": "Default",
        "project_domain_name": "Default",
        "region_name": REGION,
    }


def _authtoken(user: str, creds: Credentials) -> dict[str, Value]:
    return {"www_authenticate_uri": keystone_url(), **_service_auth(user, creds)}


def _common(layout: Layout, api: Api) -> dict[str, dict[str, Value]]:
    return {
        "oslo_messaging_notifications": {"driver": "noop"},
        "oslo_concurrency": {"lock_path": str(layout.state / api.value / "lock")},
    }


def keystone(layout: Layout) -> Ini:
    keys = layout.state / "keystone"
    return {
        "DEFAULT": {},
        "database": {"connection": layout.db_url("keystone")},
        "token": {"provider": "fernet"},
        "fernet_tokens": {"key_repository": str(keys / "fernet-keys")},
        "fernet_receipts": {"key_repository": str(keys / "fernet-keys")},
        "credential": {"key_repository": str(keys / "credential-keys")},
        # bcrypt's least cost: this cloud lives on one machine for tests, and every
        # password check (each service's token) would otherwise cost ~0.2 s of CPU.
        "identity": {"password_hash_rounds": 4},
        **_common(layout, Api.KEYSTONE),
    }


def glance(layout: Layout, creds: Credentials) -> Ini:
    images = layout.state / "glance"
    return {
        "DEFAULT": {"enabled_backends": "fs:file", "transport_url": layout.transport_url},
        "glance_store": {"default_backend": "fs"},
        "fs": {"filesystem_store_datadir": str(images / "images")},
        "os_glance_staging_store": {"filesystem_store_datadir": str(images / "staging")},
        "os_glance_tasks_store": {"filesystem_store_datadir": str(images / "tasks")},
        "database": {"connection": layout.db_url("glance")},
        "keystone_authtoken": _authtoken("glance", creds),
        "paste_deploy": {
            "flavor": "keystone",
            "config_file": str(layout.etc / "glance" / "glance-api-paste.ini"),
        },
        **_common(layout, Api.GLANCE),
    }


def placement(layout: Layout, creds: Credentials) -> Ini:
    return {
        "DEFAULT": {},
        "placement_database": {"connection": layout.db_url("placement")},
        "api": {"auth_strategy": "keystone"},
        "keystone_authtoken": _authtoken("placement", creds),
        **_common(layout, Api.PLACEMENT),
    }


def _nova_shared(layout: Layout, creds: Credentials) -> dict[str, dict[str, Value]]:
    """What every Nova process reads, nova-compute included (no database here)."""
    state = layout.state / "nova"
    return {
        "DEFAULT": {
            "transport_url": layout.transport_url,
            "host": COMPUTE_HOST,
            "my_ip": HOST,
            "state_path": str(state),
            "instances_path": str(state / "instances"),
            "compute_driver": "fake.FakeDriverWithoutFakeNodes",
            # One host: a resize lands where the server is.
            "allow_resize_to_same_host": True,
            "vif_plugging_is_fatal": False,
            "vif_plugging_timeout": 0,
            "heal_instance_info_cache_interval": 10,
        },
        "api": {"auth_strategy": "keystone"},
        "keystone_authtoken": _authtoken("nova", creds),
        "placement": {**_service_auth("nova", creds), "valid_interfaces": "public"},
        "neutron": {**_service_auth("nova", creds), "valid_interfaces": "public"},
        "service_user": {**_service_auth("nova", creds), "send_service_user_token": True},
        "glance": {"valid_interfaces": "public", "region_name": REGION},
        "cinder": {"catalog_info": "block-storage::publicURL", "os_region_name": REGION},
        "vnc": {"enabled": False},
        "spice": {"enabled": False},
        "wsgi": {"api_paste_config": str(layout.etc / "nova" / "api-paste.ini")},
        "conductor": {"workers": 1},
        "scheduler": {"workers": 1, "discover_hosts_in_cells_interval": 2},
        **_common(layout, Api.NOVA),
    }


def nova(layout: Layout, creds: Credentials) -> Ini:
    """nova-api, nova-conductor and nova-scheduler: the API database and cell1's."""
    shared = _nova_shared(layout, creds)
    return {
        **shared,
        "api_database": {"connection": layout.db_url("nova_api")},
        "database": {"connection": layout.db_url("nova")},
    }


def nova_compute(layout: Layout, creds: Credentials) -> Ini:
    return _nova_shared(layout, creds)


def neutron(layout: Layout, creds: Credentials) -> Ini:
    return {
        "DEFAULT": {
            "core_plugin": "ml2",
            "service_plugins": "router",
            "transport_url": layout.transport_url,
            "auth_strategy": "keystone",
            "allow_overlapping_ips": True,
            "dhcp_agent_notification": False,
            "notify_nova_on_port_status_changes": True,
            "notify_nova_on_port_data_changes": True,
            "state_path": str(layout.state / "neutron"),
            "api_paste_config": str(layout.etc / "neutron" / "api-paste.ini"),
            "rpc_workers": 0,
        },
        "database": {"connection": layout.db_url("neutron")},
        "keystone_authtoken": _authtoken("neutron", creds),
        "nova": _service_auth("nova", creds) | {"username": "neutron", "password": creds.password("neutron")},
        **_common(layout, Api.NEUTRON),
    }


def ml2() -> Ini:
    return {
        "ml2": {
            "type_drivers": "flat,vxlan",
            "tenant_network_types": "vxlan",
            "mechanism_drivers": "ember_bind_all",
            "extension_drivers": "port_security",
        },
        "ml2_type_flat": {"flat_networks": "public"},
        "ml2_type_vxlan": {"vni_ranges": "1:10000"},
    }


def cinder(layout: Layout, creds: Credentials) -> Ini:
    state = layout.state / "cinder"
    return {
        "DEFAULT": {
            "transport_url": layout.transport_url,
            "auth_strategy": "keystone",
            "enabled_backends": "fake",
            "host": COMPUTE_HOST,
            "my_ip": HOST,
            "state_path": str(state),
            "volumes_dir": str(state / "volumes"),
            "api_paste_config": str(layout.etc / "cinder" / "api-paste.ini"),
            # Which query filters the API allows (name, status...): without it, none.
            "resource_query_filters_file": str(layout.etc / "cinder" / "resource_filters.json"),
        },
        "database": {"connection": layout.db_url("cinder")},
        "keystone_authtoken": _authtoken("cinder", creds),
        "nova": _service_auth("cinder", creds),
        "fake": {
            # Cinder's own test driver: logs instead of making block devices.
            "volume_driver": "cinder.tests.fake_driver.FakeLoggingVolumeDriver",
            "volume_backend_name": "fake",
        },
        **_common(layout, Api.CINDER),
    }


def files(layout: Layout, creds: Credentials) -> dict[Path, str]:
    """Every config file (path under ``layout.etc``) with its text."""
    etc = layout.etc
    return {
        etc / "keystone" / "keystone.conf": render(keystone(layout)),
        etc / "glance" / "glance-api.conf": render(glance(layout, creds)),
        etc / "placement" / "placement.conf": render(placement(layout, creds)),
        etc / "nova" / "nova.conf": render(nova(layout, creds)),
        etc / "nova-compute" / "nova-compute.conf": render(nova_compute(layout, creds)),
        etc / "neutron" / "neutron.conf": render(neutron(layout, creds)),
        etc / "neutron" / "plugins" / "ml2" / "ml2_conf.ini": render(ml2()),
        etc / "cinder" / "cinder.conf": render(cinder(layout, creds)),
    }


# Paste files the releases ship in the venv's etc/, copied beside our configs.
PASTE_FILES: Mapping[str, str] = {
    "glance/glance-api-paste.ini": "glance/glance-api-paste.ini",
    "nova/api-paste.ini": "nova/api-paste.ini",
    "neutron/api-paste.ini": "neutron/api-paste.ini",
    "cinder/api-paste.ini": "cinder/api-paste.ini",
    "cinder/resource_filters.json": "cinder/resource_filters.json",
}

