"""The conformance run, continued: what Ember's updates in place, server actions and admin calls meet.

Same two clouds as test_sdk_conformance.py (the ``cloud`` fixture): properties changed in
place on Neutron, Nova and Cinder things, server actions with their statuses and their
409 when the state forbids them, and what a member may not do (403) that the admin may.
"""

from __future__ import annotations

from typing import Any

from openstack import exceptions

from tests.cloud.support import (
    Cleanup,
    CloudUnderTest,
    Conn,
    boot,
    error_of,
    make_network,
    make_router,
    statuses,
    unique,
    until,
)


def test_neutron_things_change_in_place(conn: Conn, cleanup: Cleanup) -> None:
    net, subnet = make_network(conn, cleanup, "10.81.0.0/24")
    changed = conn.network.update_network(net.id, name=unique("net"), admin_state_up=False)
    assert changed.is_admin_state_up is False and changed.status == "ACTIVE"
    changed_subnet = conn.network.update_subnet(subnet.id, dns_nameservers=["192.0.2.53"], enable_dhcp=False)
    assert changed_subnet.dns_nameservers == ["192.0.2.53"] and changed_subnet.is_dhcp_enabled is False

    group = conn.network.create_security_group(name=unique("sg"))
    cleanup.add("security group", lambda: conn.network.delete_security_group(group.id, ignore_missing=True))
    renamed = conn.network.update_security_group(group.id, description="changed")
    assert renamed.description == "changed"
    port = conn.network.create_port(network_id=net.id, name=unique("port"))
    cleanup.add("port", lambda: conn.network.delete_port(port.id, ignore_missing=True))
    changed_port = conn.network.update_port(port.id, security_groups=[group.id], admin_state_up=False)
    assert changed_port.security_group_ids == [group.id] and changed_port.is_admin_state_up is False

    router = make_router(conn, cleanup)
    public = conn.network.find_network("public", ignore_missing=False)
    cleared = conn.network.update_router(router.id, external_gateway_info=None)
    assert cleared.external_gateway_info is None and cleared.status == "ACTIVE"
    again = conn.network.update_router(router.id, external_gateway_info={"network_id": public.id})
    assert again.external_gateway_info["network_id"] == public.id
    assert again.external_gateway_info["external_fixed_ips"][0]["ip_address"].startswith("172.24.4.")


def test_server_actions_and_their_conflicts(conn: Conn, cleanup: Cleanup) -> None:
    net, _subnet = make_network(conn, cleanup, "10.82.0.0/24")
    server = boot(conn, cleanup, net.id)

    def get() -> Any:
        return conn.compute.get_server(server.id)

    def through(*wanted: str, what: str) -> list[str]:
        return statuses(get, until_in={wanted[-1], "ERROR"}, what=what)

    new_name = unique("server")
    assert conn.compute.update_server(server.id, name=new_name).name == new_name
    conn.compute.set_server_metadata(server.id, a="1", b="2")
    conn.compute.delete_server_metadata(server.id, keys=["a"])
    assert get().metadata == {"b": "2"}

    conn.compute.stop_server(server.id)
    assert set(through("ACTIVE", "SHUTOFF", what="stop")) <= {"ACTIVE", "SHUTOFF"}
    stopped_again = error_of(lambda: conn.compute.stop_server(server.id))
    assert isinstance(stopped_again, exceptions.ConflictException) and stopped_again.status_code == 409
    conn.compute.start_server(server.id)
    assert through("SHUTOFF", "ACTIVE", what="start")[-1] == "ACTIVE"
    conn.compute.reboot_server(server.id, "SOFT")
    assert set(through("REBOOT", "ACTIVE", what="reboot")) <= {"ACTIVE", "REBOOT"}
    image = conn.image.find_image("cirros", ignore_missing=False)
    conn.compute.rebuild_server(server.id, image.id)
    rebuilt = through("REBUILD", "ACTIVE", what="rebuild")
    assert rebuilt[-1] == "ACTIVE" and set(rebuilt) <= {"ACTIVE", "REBUILD"}
    no_resize = error_of(lambda: conn.compute.confirm_server_resize(server.id))
    assert isinstance(no_resize, exceptions.ConflictException) and no_resize.status_code == 409
    assert [ip.address for ip in conn.compute.server_ips(server.id)] == [
        a["addr"] for a in get().addresses[net.name]]


def test_volume_changes_in_place(conn: Conn, cleanup: Cleanup) -> None:
    volume = conn.block_storage.create_volume(name=unique("volume"), size=1)
    cleanup.add("volume", lambda: conn.block_storage.delete_volume(volume.id, ignore_missing=True))

    def get() -> Any:
        return conn.block_storage.get_volume(volume.id)

    assert statuses(get, until_in={"available", "error"}, what="volume create")[-1] == "available"
    conn.block_storage.extend_volume(volume.id, 2)
    extended = statuses(get, until_in={"available", "error_extending"}, what="extend", timeout=60)
    assert extended[-1] == "available" and set(extended) <= {"available", "extending"}
    until(lambda: get().size == 2, what="the extended size")
    shrink = error_of(lambda: conn.block_storage.extend_volume(volume.id, 1))
    assert isinstance(shrink, exceptions.BadRequestException) and shrink.status_code == 400

    renamed = conn.block_storage.update_volume(volume.id, name=unique("volume"), description="changed")
    assert renamed.description == "changed"
    conn.block_storage.set_volume_metadata(volume.id, a="1", b="2")
    conn.block_storage.delete_volume_metadata(volume.id, keys=["a"])
    assert get().metadata == {"b": "2"}
    shown = get().to_dict()
    assert shown["is_bootable"] is False and shown["volume_type"] and shown["availability_zone"]


def test_what_only_the_admin_may(cloud: CloudUnderTest, conn: Conn, cleanup: Cleanup) -> None:
    refused = error_of(lambda: conn.compute.create_flavor(name=unique("flavor"), ram=64, vcpus=1, disk=0))
    assert isinstance(refused, exceptions.ForbiddenException) and refused.status_code == 403
    external = error_of(lambda: conn.network.create_network(name=unique("net"), is_router_external=True))
    assert isinstance(external, exceptions.ForbiddenException) and external.status_code == 403

    admin = cloud.connect(admin=True)
    flavor = admin.compute.create_flavor(name=unique("flavor"), ram=64, vcpus=1, disk=0, is_public=False)
    cleanup.add("flavor", lambda: admin.compute.delete_flavor(flavor.id, ignore_missing=True))
    assert flavor.is_public is False
    admin.compute.create_flavor_extra_specs(flavor.id, {"hw:cpu_policy": "shared"})
    assert error_of(lambda: conn.compute.get_flavor(flavor.id)).status_code == 404
    admin.compute.flavor_add_tenant_access(flavor.id, str(conn.current_project_id))
    seen = conn.compute.find_flavor(flavor.name, ignore_missing=False)
    assert seen.id == flavor.id and seen.extra_specs == {"hw:cpu_policy": "shared"}


def test_a_port_in_use_is_refused_to_another_server(conn: Conn, cleanup: Cleanup) -> None:
    """Why Heat frees a server's own ports before it makes its replacement: Nova refuses a taken port."""
    net, _subnet = make_network(conn, cleanup, "10.83.0.0/24")
    port = conn.network.create_port(network_id=net.id, name=unique("port"))
    cleanup.add("port", lambda: conn.network.delete_port(port.id, ignore_missing=True))
    first = boot(conn, cleanup, net.id, port_id=port.id)
    held = conn.network.get_port(port.id)
    assert held.device_id == first.id and held.status == "ACTIVE"
    taken = error_of(lambda: boot(conn, cleanup, net.id, port_id=port.id))
    assert isinstance(taken, exceptions.ConflictException) and taken.status_code == 409
