"""What a devstack user expects to find, made through the APIs with openstacksdk (idempotent).

Keystone: projects ``service`` and ``demo``, the service users, the catalog. Then, once
the services answer: flavors ``m1.tiny``, ``m1.small`` and ``m1.medium``, an image
``cirros`` (4 KB of raw zeros: nothing boots it), an external network ``public`` with a
subnet, and the demo project's network ``private`` (unmodified heat-templates name it).
"""

from __future__ import annotations

from typing import Any, cast

import openstack.connection
import yaml
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session
from keystoneauth1.identity import v3
from openstack.identity.v3._proxy import Proxy as IdentityProxy

from scripts.openstack_one_machine.credentials import SERVICE_USERS, Credentials
from scripts.openstack_one_machine.layout import CATALOG, REGION, Layout, keystone_url, url

DOMAIN = "default"
PUBLIC_CIDR = "172.24.4.0/24"
PRIVATE_CIDR = "10.0.0.0/26"
FLAVORS: tuple[dict[str, Any], ...] = (
    {"name": "m1.tiny", "id": "1", "ram": 512, "vcpus": 1, "disk": 1},
    {"name": "m1.small", "id": "2", "ram": 2048, "vcpus": 1, "disk": 20},
    {"name": "m1.medium", "id": "3", "ram": 4096, "vcpus": 2, "disk": 40},
)


def _auth(user: str, project: str, creds: Credentials) -> dict[str, str]:
    return {
        "auth_url": keystone_url(),
        "username": user,
        "password": creds.password(user),
        "project_name": project,
        "user_domain_name": "Default",
        "project_domain_name": "Default",
    }


def clouds(layout: Layout, creds: Credentials) -> dict[str, Any]:
    """clouds.yaml's content: the member cloud (user demo) and the admin cloud."""
    common = {"region_name": REGION, "identity_api_version": 3, "interface": "public"}
    return {
        "clouds": {
            layout.member_cloud: {"auth": _auth("demo", "demo", creds), **common},
            layout.admin_cloud: {"auth": _auth("admin", "admin", creds), **common},
        }
    }


def write_clouds_yaml(layout: Layout, creds: Credentials) -> None:
    text = yaml.safe_dump(clouds(layout, creds), sort_keys=False)
    layout.clouds_yaml.touch(mode=0o600)
    layout.clouds_yaml.write_text(text)


def admin_connection(creds: Credentials) -> openstack.connection.Connection:
    return openstack.connection.Connection(
        auth=_auth("admin", "admin", creds), region_name=REGION, identity_api_version="3",
    )


def signs_in(user: str, creds: Credentials) -> bool:
    """Whether Keystone takes the user's password (an unscoped token)."""
    password = v3.Password(auth_url=keystone_url(), username=user, password=creds.password(user),
                           user_domain_name="Default")
    try:
        session.Session(auth=password).get_token()
    except ks_exceptions.Unauthorized:
        return False
    return True


def identity(conn: openstack.connection.Connection, creds: Credentials) -> None:
    """Projects, users, roles and the catalog (the identity service's own entry is bootstrap's)."""
    ident = cast(IdentityProxy, conn.identity)
    projects = {
        name: ident.find_project(name, domain_id=DOMAIN)
        or ident.create_project(name=name, domain_id=DOMAIN)
        for name in ("service", "demo")
    }
    service_role = ident.find_role("service") or ident.create_role(name="service")
    for name in (*SERVICE_USERS, "demo"):
        user = ident.find_user(name, domain_id=DOMAIN)
        if user is None:
            user = ident.create_user(name=name, password=creds.password(name), domain_id=DOMAIN)
        elif not signs_in(name, creds):
            # Only then: setting a password revokes every token the user holds, and the running
            # services (and a test's Ember) hold some; a re-seed must not pull them from under them.
            ident.update_user(user, password=creds.password(name))
        if name == "demo":
            ident.assign_project_role_to_user(projects["demo"], user, ident.find_role("member", False))
        else:
            for role in (ident.find_role("admin", False), service_role):
                ident.assign_project_role_to_user(projects["service"], user, role)
    for api, entry in CATALOG.items():
        found = [s for s in ident.services() if s.type == entry.service_type]
        service = found[0] if found else ident.create_service(name=entry.name, type=entry.service_type)
        endpoint_url = url(api) + entry.path
        have = {e.interface: e for e in ident.endpoints(service_id=service.id)}
        for interface in ("public", "internal"):
            if interface not in have:
                ident.create_endpoint(service_id=service.id, interface=interface, url=endpoint_url,
                                      region_id=REGION)
            elif have[interface].url != endpoint_url:
                ident.update_endpoint(have[interface], url=endpoint_url)


def resources(conn: openstack.connection.Connection) -> None:
    """Flavors, the cirros image, the external network ``public``, demo's network ``private``."""
    for flavor in FLAVORS:
        if conn.compute.find_flavor(flavor["name"]) is None:
            conn.compute.create_flavor(
                name=flavor["name"], id=flavor["id"], ram=flavor["ram"], vcpus=flavor["vcpus"],
                disk=flavor["disk"], is_public=True,
            )
    if conn.image.find_image("cirros") is None:
        conn.image.create_image(
            "cirros", data=bytes(4096), disk_format="raw", container_format="bare", visibility="public",
        )
    network = conn.network.find_network("public")
    if network is None:
        network = conn.network.create_network(
            name="public", is_router_external=True, provider_network_type="flat",
            provider_physical_network="public",
        )
    if conn.network.find_subnet("public-subnet") is None:
        conn.network.create_subnet(
            name="public-subnet", network_id=network.id, ip_version=4, cidr=PUBLIC_CIDR,
            gateway_ip="172.24.4.1", is_dhcp_enabled=False,
        )
    demo = cast(IdentityProxy, conn.identity).find_project("demo", ignore_missing=False, domain_id=DOMAIN)
    private = conn.network.find_network("private", project_id=demo.id)
    if private is None:
        private = conn.network.create_network(name="private", project_id=demo.id)
    if conn.network.find_subnet("private-subnet", project_id=demo.id) is None:
        conn.network.create_subnet(
            name="private-subnet", network_id=private.id, project_id=demo.id, ip_version=4,
            cidr=PRIVATE_CIDR,
        )
