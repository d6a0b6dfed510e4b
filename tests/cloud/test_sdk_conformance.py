"""One test module, two clouds: the simulator must answer openstacksdk as real OpenStack does.

Each test drives openstacksdk's proxies with the calls Ember's plugins make (see
CALLS.md in the issue's notes) and asserts what the plugins rely on: the fields of
the answers, the status sequences they wait through, and the errors (kind and
HTTP status) they act on. Runs on the simulator in ./test.sh and on real Keystone,
Nova, Neutron, Cinder and Glance in .ci/run (``slow_ci``).
"""

from __future__ import annotations

import ipaddress
import uuid
from collections.abc import Callable
from typing import Any

from openstack import exceptions

from tests.cloud.support import (
    GONE,
    Cleanup,
    Conn,
    boot,
    error_of,
    make_network,
    make_router,
    statuses,
    unique,
    until,
)


def _interface(conn: Conn, cleanup: Cleanup, router: Any, subnet: Any) -> dict[str, Any]:
    answer: dict[str, Any] = conn.network.add_interface_to_router(router.id, subnet=subnet.id)

    def remove() -> None:
        conn.network.remove_interface_from_router(router.id, subnet=subnet.id)

    cleanup.add("router interface", remove)
    return answer


def _in(cidr: str, address: str) -> bool:
    return ipaddress.ip_address(address) in ipaddress.ip_network(cidr)


def test_what_a_devstack_user_expects_by_name(conn: Conn) -> None:
    for name in ("m1.tiny", "m1.small"):
        flavor = conn.compute.find_flavor(name, ignore_missing=False).to_dict()
        assert flavor["name"] == name and flavor["id"] and flavor["ram"] > 0 and flavor["vcpus"] > 0
    image = conn.image.find_image("cirros", ignore_missing=False)
    assert image.status == "active" and image.id
    public = conn.network.find_network("public", ignore_missing=False)
    assert public.is_router_external is True and public.subnet_ids
    assert conn.network.find_network("private") is not None
    # A name that matches nothing: the sdk's own NotFound (no HTTP status of its own).
    nothing = unique("nothing")
    for find in (lambda: conn.compute.find_flavor(nothing, ignore_missing=False),
                 lambda: conn.image.find_image(nothing, ignore_missing=False),
                 lambda: conn.network.find_network(nothing, ignore_missing=False)):
        assert isinstance(error_of(find), exceptions.NotFoundException)


def test_network_subnet_router_and_interface(conn: Conn, cleanup: Cleanup) -> None:
    tag = f"ember-{uuid.uuid4()}"
    # Neutron takes no tags in a network's POST: they are set afterwards, and then filter.
    refused = error_of(lambda: conn.network.create_network(name=unique("net"), tags=[tag]))
    assert isinstance(refused, exceptions.BadRequestException) and refused.status_code == 400
    net, subnet = make_network(conn, cleanup, "10.77.0.0/24")
    assert net.status == "ACTIVE" and net.is_admin_state_up is True
    conn.network.set_tags(net, [tag])
    assert [n.id for n in conn.network.networks(tags=tag)] == [net.id]

    assert subnet.gateway_ip == "10.77.0.1" and subnet.ip_version == 4 and subnet.is_dhcp_enabled is True
    assert subnet.allocation_pools == [{"start": "10.77.0.2", "end": "10.77.0.254"}]
    assert conn.network.get_network(net.id).subnet_ids == [subnet.id]

    router = make_router(conn, cleanup)
    public = conn.network.find_network("public", ignore_missing=False)
    gateway = router.external_gateway_info
    assert router.status == "ACTIVE" and gateway["network_id"] == public.id
    assert gateway["external_fixed_ips"][0]["subnet_id"] in public.subnet_ids

    answer = _interface(conn, cleanup, router, subnet)
    assert answer["id"] == router.id and answer["subnet_id"] == subnet.id and answer["port_id"]
    again = error_of(lambda: conn.network.add_interface_to_router(router.id, subnet=subnet.id))
    assert again.status_code == 400
    (port,) = conn.network.ports(device_id=router.id)
    assert port.id == answer["port_id"] and port.device_owner == "network:router_interface"
    assert port.fixed_ips == [{"subnet_id": subnet.id, "ip_address": "10.77.0.1"}]

    for in_use in (lambda: conn.network.delete_network(net.id), lambda: conn.network.delete_subnet(subnet.id),
                   lambda: conn.network.delete_router(router.id)):
        refusal = error_of(in_use)
        assert isinstance(refusal, exceptions.ConflictException) and refusal.status_code == 409

    conn.network.remove_interface_from_router(router.id, subnet=subnet.id)
    gone = error_of(lambda: conn.network.remove_interface_from_router(router.id, subnet=subnet.id))
    assert isinstance(gone, exceptions.NotFoundException) and gone.status_code == 404
    conn.network.delete_router(router.id)
    conn.network.delete_subnet(subnet.id)
    conn.network.delete_network(net.id)
    assert error_of(lambda: conn.network.get_network(net.id)).status_code == 404
    assert error_of(lambda: conn.network.delete_network(net.id, ignore_missing=False)).status_code == 404


def test_security_group_and_rules(conn: Conn, cleanup: Cleanup) -> None:
    group = conn.network.create_security_group(name=unique("sg"), description="conformance")
    cleanup.add("security group", lambda: conn.network.delete_security_group(group.id, ignore_missing=True))
    defaults = {(r["direction"], r["ethertype"]) for r in group.security_group_rules}
    assert defaults == {("egress", "IPv4"), ("egress", "IPv6")}

    ssh = {"security_group_id": group.id, "direction": "ingress", "ethertype": "IPv4", "protocol": "tcp",
           "port_range_min": "22", "port_range_max": "22", "remote_ip_prefix": "0.0.0.0/0"}
    ping = {"security_group_id": group.id, "direction": "ingress", "ethertype": "IPv4", "protocol": "icmp",
            "remote_ip_prefix": "0.0.0.0/0"}
    made = [rule.to_dict() for rule in conn.network.create_security_group_rules([ssh, ping])]
    assert [(r["protocol"], r["port_range_min"], r["port_range_max"]) for r in made] == [
        ("tcp", 22, 22), ("icmp", None, None)]
    assert all(r["id"] and r["security_group_id"] == group.id for r in made)
    duplicate = error_of(lambda: conn.network.create_security_group_rule(**ssh))
    assert isinstance(duplicate, exceptions.ConflictException) and duplicate.status_code == 409
    listed = {r.id for r in conn.network.security_group_rules(security_group_id=group.id)}
    assert {r["id"] for r in made} <= listed and len(listed) == 4

    conn.network.delete_security_group_rule(made[0]["id"])
    assert error_of(lambda: conn.network.get_security_group_rule(made[0]["id"])).status_code == 404
    conn.network.delete_security_group(group.id)
    assert error_of(lambda: conn.network.get_security_group(group.id)).status_code == 404


def test_port_and_floating_ip(conn: Conn, cleanup: Cleanup) -> None:
    cidr = "10.78.0.0/24"
    net, subnet = make_network(conn, cleanup, cidr)
    router = make_router(conn, cleanup)
    port = conn.network.create_port(network_id=net.id, name=unique("port"),
                                    fixed_ips=[{"subnet_id": subnet.id}])
    cleanup.add("port", lambda: conn.network.delete_port(port.id, ignore_missing=True))
    # Unbound (no server): DOWN; an address from the subnet, a MAC, the default security group.
    assert port.status == "DOWN" and port.mac_address and port.security_group_ids
    (fixed,) = port.fixed_ips
    assert fixed["subnet_id"] == subnet.id and _in(cidr, fixed["ip_address"])

    public = conn.network.find_network("public", ignore_missing=False)
    unreachable = error_of(lambda: conn.network.create_ip(floating_network_id=public.id, port_id=port.id))
    assert isinstance(unreachable, exceptions.NotFoundException) and unreachable.status_code == 404

    _interface(conn, cleanup, router, subnet)
    fip = conn.network.create_ip(floating_network_id=public.id, port_id=port.id)
    cleanup.add("floating ip", lambda: conn.network.delete_ip(fip.id, ignore_missing=True))
    assert fip.port_id == port.id and fip.fixed_ip_address == fixed["ip_address"]
    assert fip.router_id == router.id and fip.floating_network_id == public.id
    assert _in("172.24.4.0/24", fip.floating_ip_address)
    assert conn.network.get_ip(fip.id).floating_ip_address == fip.floating_ip_address

    loose = conn.network.update_ip(fip.id, port_id=None)
    assert loose.port_id is None and loose.fixed_ip_address is None
    conn.network.delete_ip(fip.id)
    assert error_of(lambda: conn.network.get_ip(fip.id)).status_code == 404
    conn.network.delete_port(port.id)
    assert error_of(lambda: conn.network.get_port(port.id)).status_code == 404


def test_keypair_and_server_group(conn: Conn, cleanup: Cleanup) -> None:
    name = unique("key")
    made = conn.compute.create_keypair(name=name)
    cleanup.add("keypair", lambda: conn.compute.delete_keypair(name, ignore_missing=True))
    assert made.private_key.startswith("-----BEGIN") and made.public_key.startswith("ssh-")
    assert made.fingerprint and made.type == "ssh"
    shown = conn.compute.get_keypair(name)
    assert shown.private_key is None and shown.fingerprint == made.fingerprint
    duplicate = error_of(lambda: conn.compute.create_keypair(name=name))
    assert isinstance(duplicate, exceptions.ConflictException) and duplicate.status_code == 409

    imported_name = unique("key")
    imported = conn.compute.create_keypair(name=imported_name, public_key=made.public_key)
    cleanup.add("keypair", lambda: conn.compute.delete_keypair(imported_name, ignore_missing=True))
    assert imported.private_key is None and imported.fingerprint == made.fingerprint
    conn.compute.delete_keypair(name)
    assert error_of(lambda: conn.compute.get_keypair(name)).status_code == 404

    group = conn.compute.create_server_group(name=unique("group"), policies=["anti-affinity"])
    cleanup.add("server group", lambda: conn.compute.delete_server_group(group.id, ignore_missing=True))
    assert group.id and group.name in {g.name for g in conn.compute.server_groups()}
    conn.compute.delete_server_group(group.id)
    assert error_of(lambda: conn.compute.get_server_group(group.id)).status_code == 404


def _floating_address(conn: Conn, cleanup: Cleanup, subnet: Any, port_id: str,
                      addresses: Callable[[], list[dict[str, Any]]]) -> None:
    """A floating IP on the server's port: Nova's ``addresses`` come to show it as ``floating``."""
    _interface(conn, cleanup, make_router(conn, cleanup), subnet)
    public = conn.network.find_network("public", ignore_missing=False)
    fip = conn.network.create_ip(floating_network_id=public.id, port_id=port_id)
    cleanup.add("floating ip", lambda: conn.network.delete_ip(fip.id, ignore_missing=True))
    floating = until(lambda: [a for a in addresses() if a["OS-EXT-IPS:type"] == "floating"],
                     what="the floating address in the server's addresses", timeout=60)
    assert [a["addr"] for a in floating] == [fip.floating_ip_address]


def _resize_and_confirm(conn: Conn, server_id: str, flavor_id: str) -> None:
    def get() -> Any:
        return conn.compute.get_server(server_id)

    conn.compute.resize_server(server_id, flavor_id)
    resized = statuses(get, until_in={"VERIFY_RESIZE", "ERROR"}, what="resize")
    assert resized[-1] == "VERIFY_RESIZE" and set(resized) <= {"ACTIVE", "RESIZE", "VERIFY_RESIZE"}
    conn.compute.confirm_server_resize(server_id)
    confirmed = statuses(get, until_in={"ACTIVE", "ERROR"}, what="resize confirm")
    assert confirmed[-1] == "ACTIVE" and set(confirmed) <= {"VERIFY_RESIZE", "ACTIVE"}
    assert get().flavor["original_name"] == "m1.small"


def _attach_and_detach(conn: Conn, cleanup: Cleanup, server_id: str, tag: str) -> Any:
    """A volume made, attached to the server, refused deletion while in use, detached: the volume."""
    volume = conn.block_storage.create_volume(name=unique("volume"), size=1, metadata={"ember_resource": tag})
    cleanup.add("volume", lambda: conn.block_storage.delete_volume(volume.id, ignore_missing=True))

    def get_volume() -> Any:
        return conn.block_storage.get_volume(volume.id)

    made = statuses(get_volume, until_in={"available", "error"}, what="volume create")
    assert made[-1] == "available" and set(made) <= {"creating", "available"}
    assert get_volume().metadata == {"ember_resource": tag}
    attachment = conn.compute.create_volume_attachment(server_id, volume_id=volume.id)
    cleanup.add("attachment", lambda: conn.compute.delete_volume_attachment(server_id, volume.id))
    assert attachment.volume_id == volume.id and attachment.device.startswith("/dev/")
    attached = statuses(get_volume, until_in={"in-use", "error"}, what="attach")
    assert attached[-1] == "in-use" and set(attached) <= {"available", "reserved", "attaching", "in-use"}
    (held,) = get_volume().attachments
    assert held["server_id"] == server_id and held["attachment_id"] and held["device"] == attachment.device
    in_use = error_of(lambda: conn.block_storage.delete_volume(volume.id))
    assert isinstance(in_use, exceptions.BadRequestException) and in_use.status_code == 400

    conn.compute.delete_volume_attachment(server_id, volume.id)
    detached = statuses(get_volume, until_in={"available", "error"}, what="detach")
    assert detached[-1] == "available" and set(detached) <= {"in-use", "detaching", "available"}
    assert get_volume().attachments == []
    return volume


def test_server_boots_resizes_attaches_and_goes(conn: Conn, cleanup: Cleanup) -> None:
    cidr = "10.79.0.0/24"
    net, subnet = make_network(conn, cleanup, cidr)
    small = conn.compute.find_flavor("m1.small", ignore_missing=False)
    image = conn.image.find_image("cirros", ignore_missing=False)
    tag = f"ember-{uuid.uuid4()}"
    server = boot(conn, cleanup, net.id, metadata={"ember_resource": tag})

    def get() -> Any:
        return conn.compute.get_server(server.id)

    shown = get().to_dict()
    assert shown["task_state"] is None and shown["metadata"] == {"ember_resource": tag}
    assert shown["flavor"]["original_name"] == "m1.tiny" and shown["image"]["id"] == image.id
    (address,) = shown["addresses"][net.name]
    assert address["version"] == 4 and address["OS-EXT-IPS:type"] == "fixed" and _in(cidr, address["addr"])
    listed = [s.to_dict() for s in conn.compute.servers(details=True, name=server.name)]
    assert [(s["id"], s["metadata"]["ember_resource"]) for s in listed] == [(server.id, tag)]
    (port,) = conn.network.ports(device_id=server.id)
    assert port.status == "ACTIVE" and port.device_owner.startswith("compute:")
    assert port.mac_address == address["OS-EXT-IPS-MAC:mac_addr"]
    _floating_address(conn, cleanup, subnet, port.id, lambda: get().addresses[net.name])

    _resize_and_confirm(conn, server.id, small.id)
    volume = _attach_and_detach(conn, cleanup, server.id, tag)

    conn.compute.delete_server(server.id)
    deleted = statuses(get, until_in={GONE, "ERROR"}, what="server delete")
    assert deleted[-1] == GONE and set(deleted) <= {"ACTIVE", "DELETED", GONE}
    assert list(conn.network.ports(device_id=server.id)) == []
    conn.block_storage.delete_volume(volume.id)
    gone = statuses(lambda: conn.block_storage.get_volume(volume.id), until_in={GONE, "error_deleting"},
                    what="volume delete")
    assert gone[-1] == GONE and set(gone) <= {"available", "deleting", GONE}


def test_missing_things_answer_404_and_bad_references_400(conn: Conn) -> None:
    missing = str(uuid.uuid4())
    for call in (lambda: conn.compute.get_server(missing), lambda: conn.block_storage.get_volume(missing),
                 lambda: conn.network.get_network(missing), lambda: conn.network.get_port(missing),
                 lambda: conn.network.get_router(missing), lambda: conn.compute.get_keypair(missing),
                 lambda: conn.compute.delete_server(missing, ignore_missing=False),
                 lambda: conn.block_storage.delete_volume(missing, ignore_missing=False)):
        refusal = error_of(call)
        assert isinstance(refusal, exceptions.NotFoundException) and refusal.status_code == 404
    image = conn.image.find_image("cirros", ignore_missing=False)
    net = conn.network.find_network("private", ignore_missing=False)
    bad_flavor = error_of(lambda: conn.compute.create_server(
        name=unique("server"), flavor_id=missing, image_id=image.id, networks=[{"uuid": net.id}]))
    assert isinstance(bad_flavor, exceptions.BadRequestException) and bad_flavor.status_code == 400


def test_what_heats_parity_cases_rely_on(conn: Conn) -> None:
    """The answers the clouds parity cases (tests/heat_parity/cases/clouds) met on real OpenStack."""
    image = conn.image.find_image("cirros", ignore_missing=False)
    flavor = conn.compute.find_flavor("m1.tiny", ignore_missing=False)
    net = conn.network.find_network("private", ignore_missing=False)
    no_group = error_of(lambda: conn.compute.create_server(
        name=unique("server"), flavor_id=flavor.id, image_id=image.id, networks=[{"uuid": net.id}],
        security_groups=[{"name": "no-such-group"}]))
    assert isinstance(no_group, exceptions.BadRequestException) and no_group.status_code == 400
    assert no_group.details == "Unable to find security_group with name or id 'no-such-group'"
    # Heat's clients print each refusal's request id.
    assert str(no_group.request_id).startswith("req-")
    assert list(conn.network.subnet_pools(name="no-such-pool")) == []
    missing = error_of(lambda: conn.network.get_subnet_pool(str(uuid.uuid4())))
    assert isinstance(missing, exceptions.NotFoundException) and missing.status_code == 404
