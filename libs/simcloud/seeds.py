"""What a devstack user expects to find, made on first start (idempotent): projects, users, ``public``.

Projects ``admin`` and ``demo``; users ``admin`` (admin of both) and ``demo``
(member of demo), password auth; the external network ``public`` with subnet
``public-subnet`` (172.24.4.0/24, devstack's) and ``private`` with ``private-subnet``
(10.0.0.0/26, shared). Flavors and the ``cirros`` image
are Nova's and Glance's own seeds; devstack's ``router1`` (``private-subnet`` to ``public``)
is Neutron's. More projects, each with a user's member role, are :func:`member_project`'s.
"""

from __future__ import annotations

import dataclasses
import uuid

from libs.db import Conn

DOMAIN = "default"


@dataclasses.dataclass(frozen=True)
class Credentials:
    admin_password: str = "admin"
    demo_password: str = "demo"


async def _project(conn: Conn, name: str) -> str:
    await conn.execute("INSERT INTO simcloud.projects (id, name) VALUES ($1, $2)"
                       " ON CONFLICT (name) DO NOTHING", uuid.uuid4().hex, name)
    project_id: str = await conn.fetchval("SELECT id FROM simcloud.projects WHERE name = $1", name)
    return project_id


async def _user(conn: Conn, name: str, password: str, project_id: str) -> str:
    await conn.execute(
        "INSERT INTO simcloud.users (id, name, password, default_project_id) VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (name) DO UPDATE SET password = EXCLUDED.password",
        uuid.uuid4().hex, name, password, project_id)
    user_id: str = await conn.fetchval("SELECT id FROM simcloud.users WHERE name = $1", name)
    return user_id


async def _role(conn: Conn, user_id: str, project_id: str, role: str) -> None:
    await conn.execute("INSERT INTO simcloud.role_assignments (user_id, project_id, role) VALUES ($1, $2, $3)"
                       " ON CONFLICT DO NOTHING", user_id, project_id, role)


async def identity(conn: Conn, credentials: Credentials) -> None:
    admin_project = await _project(conn, "admin")
    demo_project = await _project(conn, "demo")
    admin = await _user(conn, "admin", credentials.admin_password, admin_project)
    demo = await _user(conn, "demo", credentials.demo_password, demo_project)
    for project in (admin_project, demo_project):
        for role in ("admin", "member", "reader"):
            await _role(conn, admin, project, role)
    for role in ("member", "reader"):
        await _role(conn, demo, demo_project, role)


async def member_project(conn: Conn, name: str, user: str) -> str:
    """Project ``name`` (made if absent), in which the existing ``user`` has the member and reader
    roles, as an operator gives a team its project; the project's id."""
    user_id = await conn.fetchval("SELECT id FROM simcloud.users WHERE name = $1", user)
    if user_id is None:
        raise LookupError(f"no simulated user {user!r}")
    async with conn.transaction():
        project_id = await _project(conn, name)
        for role in ("member", "reader"):
            await _role(conn, user_id, project_id, role)
    return project_id


@dataclasses.dataclass(frozen=True)
class SeedNetwork:
    name: str
    project: str  # the owning project's name
    external: bool
    shared: bool
    cidr: str
    gateway: str
    pool: tuple[str, str]
    dhcp: bool
    data: dict[str, object]


# devstack's: ``public`` for routers' gateways and floating IPs; ``private`` in the demo project and
# shared, so admin boots on it too.
NETWORKS = (
    SeedNetwork("public", "admin", external=True, shared=False, cidr="172.24.4.0/24", gateway="172.24.4.1",
                pool=("172.24.4.2", "172.24.4.254"), dhcp=False,
                data={"provider:network_type": "flat", "provider:physical_network": "public", "mtu": 1500}),
    SeedNetwork("private", "demo", external=False, shared=True, cidr="10.0.0.0/26", gateway="10.0.0.1",
                pool=("10.0.0.2", "10.0.0.62"), dhcp=True,
                data={"provider:network_type": "vxlan", "mtu": 1450}),
)


async def network(conn: Conn, spec: SeedNetwork) -> None:
    if await conn.fetchval("SELECT 1 FROM simcloud.networks WHERE name = $1", spec.name):
        return
    project = await conn.fetchval("SELECT id FROM simcloud.projects WHERE name = $1", spec.project)
    network_id = str(uuid.uuid4())
    await conn.execute(
        "INSERT INTO simcloud.networks (id, project_id, name, external, shared, data)"
        " VALUES ($1, $2, $3, $4, $5, $6)",
        network_id, project, spec.name, spec.external, spec.shared,
        {**spec.data, "router:external": spec.external, "availability_zones": ["nova"]})
    await conn.execute(
        "INSERT INTO simcloud.subnets (id, project_id, network_id, name, cidr, ip_version, gateway_ip, data)"
        " VALUES ($1, $2, $3, $4, $5, 4, $6, $7)",
        str(uuid.uuid4()), project, network_id, f"{spec.name}-subnet", spec.cidr, spec.gateway,
        {"allocation_pools": [{"start": spec.pool[0], "end": spec.pool[1]}], "enable_dhcp": spec.dhcp,
         "dns_nameservers": [], "host_routes": []})


async def seed(conn: Conn, credentials: Credentials) -> None:
    async with conn.transaction():
        await identity(conn, credentials)
        for seed_network in NETWORKS:
            await network(conn, seed_network)
