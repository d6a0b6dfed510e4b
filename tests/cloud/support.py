"""What the cloud conformance tests share: the cloud under test, polling, and cleaning up.

The tests call openstacksdk's proxies the way Ember's plugins ask the worker to
(``conn.<service>.<method>(...)``, answers read through ``to_dict()``), so the same
test run against the simulator and against real OpenStack shows where they differ.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import openstack.connection
from openstack import exceptions
from openstack.config import loader

T = TypeVar("T")
Conn = openstack.connection.Connection
GONE = "<404>"  # what a status poll records once the thing answers 404


@dataclasses.dataclass(frozen=True)
class CloudUnderTest:
    """A cloud the conformance tests drive: a clouds.yaml and its member and admin entries."""

    kind: str  # "sim" or "real"
    clouds_yaml: Path
    member: str
    admin: str

    def connect(self, *, admin: bool = False) -> openstack.connection.Connection:
        config = loader.OpenStackConfig(config_files=[str(self.clouds_yaml)], load_envvars=False)
        region = config.get_one(cloud=self.admin if admin else self.member)
        return openstack.connection.Connection(config=region)


def until(probe: Callable[[], T | None], *, what: str, timeout: float = 120.0, interval: float = 0.25) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not after {timeout:.0f}s")
        time.sleep(interval)


def statuses(get: Callable[[], Any], *, until_in: set[str], what: str, timeout: float = 120.0) -> list[str]:
    """The distinct statuses ``get()`` goes through until one of ``until_in`` (``GONE`` for 404)."""
    seen: list[str] = []

    def step() -> bool:
        try:
            status = str(get().status)
        except exceptions.NotFoundException:
            status = GONE
        if not seen or seen[-1] != status:
            seen.append(status)
        return status in until_in

    until(step, what=f"{what} (went through {seen})", timeout=timeout)
    return seen


def unique(prefix: str) -> str:
    return f"conformance-{prefix}-{uuid.uuid4().hex[:8]}"


class Cleanup:
    """Deletes run last-first at the end of a test, each ignoring what is gone already."""

    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], object]]] = []

    def add(self, what: str, undo: Callable[[], object]) -> None:
        self._undo.append((what, undo))

    def run(self) -> list[str]:
        failures = []
        for what, undo in reversed(self._undo):
            try:
                undo()
            except exceptions.NotFoundException:
                continue
            except Exception as exc:
                failures.append(f"{what}: {type(exc).__name__}: {exc}")
        self._undo.clear()
        return failures


def cleanup_after() -> Iterator[Cleanup]:
    """The body of the ``cleanup`` fixture: a test's deletes, and a failure if any did not go."""
    cleanup = Cleanup()
    yield cleanup
    failures = cleanup.run()
    assert not failures, "could not clean up: " + "; ".join(failures)


def make_network(conn: Conn, cleanup: Cleanup, cidr: str) -> tuple[Any, Any]:
    """A network and its subnet, deleted at the end of the test."""
    net = conn.network.create_network(name=unique("net"))
    cleanup.add("network", lambda: conn.network.delete_network(net.id, ignore_missing=True))
    subnet = conn.network.create_subnet(network_id=net.id, name=unique("subnet"), ip_version=4, cidr=cidr)
    cleanup.add("subnet", lambda: conn.network.delete_subnet(subnet.id, ignore_missing=True))
    return net, subnet


def make_router(conn: Conn, cleanup: Cleanup) -> Any:
    """A router with its gateway on ``public``, deleted at the end of the test."""
    public = conn.network.find_network("public", ignore_missing=False)
    router = conn.network.create_router(name=unique("router"),
                                        external_gateway_info={"network_id": public.id})
    cleanup.add("router", lambda: conn.network.delete_router(router.id, ignore_missing=True))
    return router


def boot(conn: Conn, cleanup: Cleanup, network_id: str, *, port_id: str | None = None, **extra: Any) -> Any:
    """A server of m1.tiny and cirros on the network (or the port), ACTIVE; deleted (and waited for)
    at the end."""
    server = conn.compute.create_server(
        name=unique("server"), flavor_id=conn.compute.find_flavor("m1.tiny", ignore_missing=False).id,
        image_id=conn.image.find_image("cirros", ignore_missing=False).id,
        networks=[{"port": port_id} if port_id else {"uuid": network_id}], **extra)

    def delete() -> None:
        conn.compute.delete_server(server.id, ignore_missing=True)
        conn.compute.wait_for_delete(server, wait=120)

    cleanup.add("server", delete)
    booted = statuses(lambda: conn.compute.get_server(server.id), until_in={"ACTIVE", "ERROR"}, what="boot")
    assert booted[-1] == "ACTIVE" and set(booted) <= {"BUILD", "ACTIVE"}
    return server


def sweep(conn: openstack.connection.Connection, prefix: str = "conformance-") -> int:
    """Delete what earlier runs that died left behind (names ``conformance-*``, stacks' included);
    how many things.

    The real cloud outlives a run, and its quotas (10 servers) would fill up with leftovers.
    """
    def ours(thing: Any) -> bool:
        return str(thing.name or "").startswith(prefix)

    swept = 0
    our_networks = {n.id for n in conn.network.networks() if ours(n)}
    # A server on one of our networks is ours too, whatever it is called (a stack's, left by a run
    # that died with it).
    on_ours = {p.device_id for p in conn.network.ports() if p.network_id in our_networks
               and str(p.device_owner or "").startswith("compute:")}
    servers = [s for s in conn.compute.servers() if ours(s) or s.id in on_ours]
    for server in servers:
        conn.compute.delete_server(server.id, ignore_missing=True)
    for server in servers:
        conn.compute.wait_for_delete(server, wait=120)
    for volume in [v for v in conn.block_storage.volumes() if ours(v)]:
        conn.block_storage.delete_volume(volume.id, ignore_missing=True)
        swept += 1
    ports = list(conn.network.ports())
    # A stack's own ports (a server's internal port) are named by Ember, not by the prefix: a port
    # on one of our networks is ours too, and so is a floating IP on it (its router waits for it).
    our_ports = {p.id for p in ports if ours(p) or p.network_id in our_networks}
    for ip in conn.network.ips(project_id=conn.current_project_id):
        if ip.port_id is None or ip.port_id in our_ports:
            conn.network.delete_ip(ip.id, ignore_missing=True)
            swept += 1
    for router in [r for r in conn.network.routers() if ours(r)]:
        for port in conn.network.ports(device_id=router.id, device_owner="network:router_interface"):
            conn.network.remove_interface_from_router(router.id, port=port.id)
        conn.network.delete_router(router.id, ignore_missing=True)
    for port in [p for p in conn.network.ports() if p.id in our_ports and not ours(p)]:
        conn.network.delete_port(port.id, ignore_missing=True)  # ours by its network (above)
        swept += 1
    things: list[tuple[Callable[[], Any], Callable[[str], Any]]] = [
        (conn.network.ports, lambda i: conn.network.delete_port(i, ignore_missing=True)),
        (conn.network.security_groups, lambda i: conn.network.delete_security_group(i, ignore_missing=True)),
        (conn.network.networks, lambda i: conn.network.delete_network(i, ignore_missing=True)),
        (conn.compute.keypairs, lambda i: conn.compute.delete_keypair(i, ignore_missing=True)),
        (conn.compute.server_groups, lambda i: conn.compute.delete_server_group(i, ignore_missing=True)),
    ]
    for listing, delete in things:
        for thing in [t for t in listing() if ours(t)]:
            delete(thing.id)
            swept += 1
    return swept + len(servers)


def error_of(call: Callable[[], object]) -> exceptions.HttpException:
    """The openstacksdk HTTP error ``call`` raised (fails the test if it raised none)."""
    try:
        answer = call()
    except exceptions.HttpException as exc:
        return exc
    raise AssertionError(f"expected the cloud to refuse the call; it answered {answer!r}")
