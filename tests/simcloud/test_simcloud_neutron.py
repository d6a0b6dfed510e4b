"""Neutron of the simulated cloud, driven by the real openstacksdk over HTTP on real PostgreSQL."""

from __future__ import annotations

import pytest
from openstack import exceptions
from openstack.connection import Connection

from tests.simcloud.conftest import Sim


@pytest.fixture(scope="module")
def demo(sim: Sim) -> Connection:
    return sim.connect("demo")


def test_network_subnet_port_life_cycle(sim: Sim, demo: Connection) -> None:
    admin = sim.connect("admin")
    with pytest.raises(exceptions.BadRequestException, match="Attribute 'tags' not allowed in POST"):
        demo.network.create_network(name="n1", tags=["ember-a"])
    net = demo.network.create_network(name="n1")
    demo.network.set_tags(net, ["ember-a"])
    assert net.status == "ACTIVE" and net.is_admin_state_up and not net.is_router_external
    assert demo.network.get_network(net.id).tags == ["ember-a"]
    subnet = demo.network.create_subnet(network_id=net.id, cidr="10.1.0.0/24", ip_version=4,
                                        dns_nameservers=["8.8.8.8"], name="s1")
    assert subnet.gateway_ip == "10.1.0.1"
    assert subnet.allocation_pools == [{"start": "10.1.0.2", "end": "10.1.0.254"}]
    assert demo.network.get_network(net.id).subnet_ids == [subnet.id]
    port = demo.network.create_port(network_id=net.id, name="p1", tags=["dropped"])
    assert port.tags == [] and port.binding_host_id is None
    assert port.fixed_ips == [{"subnet_id": subnet.id, "ip_address": "10.1.0.2"}]
    assert port.status == "DOWN" and port.mac_address.startswith("fa:16:3e:")
    default = next(demo.network.security_groups(name="default"))
    assert port.security_group_ids == [default.id]
    fixed = demo.network.create_port(network_id=net.id, fixed_ips=[{"ip_address": "10.1.0.50"}])
    assert fixed.fixed_ips[0]["ip_address"] == "10.1.0.50"
    with pytest.raises(exceptions.ConflictException, match="already allocated"):
        demo.network.create_port(network_id=net.id, fixed_ips=[{"ip_address": "10.1.0.50"}])
    bound = demo.network.update_port(port, device_id="server-1", device_owner="compute:nova")
    assert bound.status == "ACTIVE" and bound.binding_host_id is None  # an admin's to see
    assert admin.network.get_port(port.id).binding_host_id
    listed = [p.id for p in demo.network.ports(network_id=net.id, fixed_ips="ip_address=10.1.0.50")]
    assert listed == [fixed.id]
    with pytest.raises(exceptions.ConflictException, match="IP allocation from this subnet"):
        demo.network.delete_subnet(subnet)
    with pytest.raises(exceptions.ConflictException) as refused:
        demo.network.delete_network(net)
    assert refused.value.response is not None
    assert refused.value.response.json()["NeutronError"]["type"] == "NetworkInUse"
    demo.network.delete_port(port)
    demo.network.delete_port(fixed)
    demo.network.delete_subnet(subnet)
    demo.network.delete_network(net)
    with pytest.raises(exceptions.NotFoundException):
        demo.network.get_network(net.id)
    assert demo.network.find_network(net.id) is None


def test_router_interface_and_floating_ip(demo: Connection) -> None:
    public = demo.network.find_network("public")
    assert public is not None and public.is_router_external
    net = demo.network.create_network(name="n2")
    subnet = demo.network.create_subnet(network_id=net.id, cidr="10.2.0.0/24", ip_version=4)
    router = demo.network.create_router(name="r1", external_gateway_info={"network_id": public.id})
    assert router.external_gateway_info["network_id"] == public.id
    assert router.external_gateway_info["external_fixed_ips"][0]["ip_address"].startswith("172.24.4.")
    port = demo.network.create_port(network_id=net.id)
    with pytest.raises(exceptions.NotFoundException, match="not reachable"):
        demo.network.create_ip(floating_network_id=public.id, port_id=port.id)
    info = demo.network.add_interface_to_router(router, subnet=subnet.id)
    assert info["subnet_id"] == subnet.id
    interface = demo.network.get_port(info["port_id"])
    assert interface.fixed_ips[0]["ip_address"] == "10.2.0.1"
    assert interface.device_owner == "network:router_interface" and interface.status == "DOWN"
    with pytest.raises(exceptions.BadRequestException, match="already has a port"):
        demo.network.add_interface_to_router(router, subnet=subnet.id)
    fip = demo.network.create_ip(floating_network_id=public.id)
    assert fip.status == "DOWN" and fip.port_id is None
    fip = demo.network.update_ip(fip, port_id=port.id)
    assert fip.fixed_ip_address == port.fixed_ips[0]["ip_address"] and fip.router_id == router.id
    assert fip.status == "ACTIVE"
    with pytest.raises(exceptions.ConflictException, match="already has a floating IP"):
        demo.network.create_ip(floating_network_id=public.id, port_id=port.id)
    assert [f.id for f in demo.network.ips(port_id=port.id)] == [fip.id]
    with pytest.raises(exceptions.ConflictException, match="required by one or more floating IPs"):
        demo.network.remove_interface_from_router(router, subnet=subnet.id)
    fip = demo.network.update_ip(fip, port_id=None)
    assert fip.port_id is None and fip.fixed_ip_address is None
    with pytest.raises(exceptions.ConflictException, match="still has ports"):
        demo.network.delete_router(router)
    demo.network.remove_interface_from_router(router, subnet=subnet.id)
    with pytest.raises(exceptions.NotFoundException, match="no interface on subnet"):
        demo.network.remove_interface_from_router(router, subnet=subnet.id)
    by_port = demo.network.add_interface_to_router(router, port=port.id)
    assert by_port["port_id"] == port.id
    demo.network.remove_interface_from_router(router, port=port.id)
    assert demo.network.find_port(port.id) is None
    demo.network.delete_ip(fip)
    demo.network.update_router(router, external_gateway_info={})
    assert demo.network.get_router(router.id).external_gateway_info is None
    demo.network.delete_router(router)
    demo.network.delete_subnet(subnet)
    demo.network.delete_network(net)


def test_security_groups_and_rules(demo: Connection) -> None:
    group = demo.network.create_security_group(name="web", description="web servers")
    rules = group.security_group_rules
    assert sorted((r["direction"], r["ethertype"]) for r in rules) == [("egress", "IPv4"), ("egress", "IPv6")]
    rule = demo.network.create_security_group_rule(
        security_group_id=group.id, direction="ingress", protocol="tcp", port_range_min=80,
        port_range_max=80, remote_ip_prefix="0.0.0.0/0", ethertype="IPv4")
    assert rule.protocol == "tcp" and rule.port_range_min == 80
    with pytest.raises(exceptions.ConflictException, match="already exists") as dup:
        demo.network.create_security_group_rule(
            security_group_id=group.id, direction="ingress", protocol="tcp", port_range_min=80,
            port_range_max=80, remote_ip_prefix="0.0.0.0/0", ethertype="IPv4")
    assert dup.value.response is not None
    assert dup.value.response.json()["NeutronError"]["type"] == "SecurityGroupRuleExists"
    with pytest.raises(exceptions.BadRequestException, match="port_range_min must be <= port_range_max"):
        demo.network.create_security_group_rule(security_group_id=group.id, direction="ingress",
                                                protocol="tcp", port_range_min=90, port_range_max=80)
    # openstacksdk has no rule update; Neutron takes a new description and nothing else
    path = f"/security-group-rules/{rule.id}"
    described = demo.network.put(path, json={"security_group_rule": {"description": "web"}})
    assert described.json()["security_group_rule"]["description"] == "web"
    refused = demo.network.put(path, json={"security_group_rule": {"protocol": "udp"}})
    assert refused.status_code == 400 and "read-only attribute protocol" in refused.text
    remote = demo.network.create_security_group_rule(security_group_id=group.id, direction="ingress",
                                                     remote_group_id=group.id, protocol="icmp")
    assert remote.remote_group_id == group.id
    assert len(demo.network.get_security_group(group.id).security_group_rules) == 4
    net = demo.network.create_network(name="n3")
    demo.network.create_subnet(network_id=net.id, cidr="10.3.0.0/24", ip_version=4)
    port = demo.network.create_port(network_id=net.id, security_groups=[group.id])
    with pytest.raises(exceptions.ConflictException, match="in use"):
        demo.network.delete_security_group(group)
    demo.network.delete_security_group_rule(rule)
    demo.network.delete_port(port)
    demo.network.delete_security_group(group)
    default = next(demo.network.security_groups(name="default"))
    with pytest.raises(exceptions.ConflictException):
        demo.network.delete_security_group(default)


def test_tags_filters_paging_and_quota(sim: Sim, demo: Connection) -> None:
    made = [demo.network.create_network(name=f"page-{i}") for i in range(5)]
    rules = demo.network.create_security_group_rules([
        {"security_group_id": next(demo.network.security_groups(name="default")).id, "direction": "ingress",
         "ethertype": "IPv4", "protocol": "tcp", "port_range_min": str(port), "port_range_max": str(port),
         "remote_ip_prefix": "10.0.0.0/8"} for port in (22, 443)])
    assert sorted(r.port_range_min for r in rules) == [22, 443]
    demo.network.set_tags(made[0], ["ember-x", "blue"])
    demo.network.set_tags(made[1], ["ember-x"])
    assert demo.network.get_network(made[0].id).tags == ["ember-x", "blue"]
    assert {n.id for n in demo.network.networks(tags="ember-x")} == {made[0].id, made[1].id}
    assert [n.id for n in demo.network.networks(tags=["ember-x", "blue"])] == [made[0].id]
    assert {n.id for n in demo.network.networks(any_tags="blue,nothing")} == {made[0].id}
    mine = {n.id for n in made}
    paged = [n.id for n in demo.network.networks(limit=2) if n.id in mine]
    assert sorted(paged) == sorted(mine)
    by_name = [n.name for n in demo.network.networks(sort_key="name", sort_dir="desc") if n.id in mine]
    assert by_name == [f"page-{i}" for i in reversed(range(5))]
    admin = sim.connect("admin")
    project = demo.current_project_id
    assert project is not None
    admin.network.update_quota(project, networks=len(list(demo.network.networks(project_id=project))))
    with pytest.raises(exceptions.ConflictException, match="Quota exceeded") as over:
        demo.network.create_network(name="one-too-many")
    assert over.value.response is not None
    assert over.value.response.json()["NeutronError"]["type"] == "OverQuota"
    assert admin.network.get_quota_default(project).networks == 100
    admin.network.delete_quota(project)
    assert demo.network.get_quota(project).networks == 100
    for net in made:
        demo.network.delete_network(net)


def test_server_ports_and_floating_ip(demo: Connection) -> None:
    public = demo.network.find_network("public", ignore_missing=False)
    private = demo.network.find_network("private", ignore_missing=False)
    subnet = demo.network.find_subnet("private-subnet", ignore_missing=False)
    # devstack's router1 joins private-subnet to public (seeded).
    router = demo.network.find_router("router1", ignore_missing=False)
    assert router.external_gateway_info["network_id"] == public.id
    flavor = demo.compute.find_flavor("m1.tiny", ignore_missing=False)
    image = demo.image.find_image("cirros", ignore_missing=False)
    server = demo.compute.create_server(name="vm", flavor_id=flavor.id, image_id=image.id,
                                        networks=[{"uuid": private.id}])
    demo.compute.wait_for_server(server, wait=30)
    ports = list(demo.network.ports(device_id=server.id))
    assert len(ports) == 1 and ports[0].status == "ACTIVE"
    assert ports[0].fixed_ips[0]["subnet_id"] == subnet.id
    fip = demo.network.create_ip(floating_network_id=public.id, port_id=ports[0].id)
    assert fip.router_id == router.id and fip.fixed_ip_address == ports[0].fixed_ips[0]["ip_address"]
    addresses = demo.compute.get_server(server.id).addresses["private"]
    assert {a["OS-EXT-IPS:type"]: a["addr"] for a in addresses} == {
        "fixed": fip.fixed_ip_address, "floating": fip.floating_ip_address}
    demo.compute.delete_server(server.id)
    demo.compute.wait_for_delete(server, wait=30)
    assert list(demo.network.ports(device_id=server.id)) == []
    assert demo.network.get_ip(fip.id).port_id is None
    demo.network.delete_ip(fip)


def test_port_fixed_ips_update_and_subnet_without_gateway(demo: Connection) -> None:
    net = demo.network.create_network(name="n4")
    subnet = demo.network.create_subnet(network_id=net.id, cidr="10.4.0.0/24", ip_version=4, gateway_ip=None,
                                        allocation_pools=[{"start": "10.4.0.10", "end": "10.4.0.11"}])
    assert subnet.gateway_ip is None
    first = demo.network.create_port(network_id=net.id)
    assert first.fixed_ips[0]["ip_address"] == "10.4.0.10"
    moved = demo.network.update_port(first, fixed_ips=[{"subnet_id": subnet.id, "ip_address": "10.4.0.99"}])
    assert [ip["ip_address"] for ip in moved.fixed_ips] == ["10.4.0.99"]
    second = demo.network.create_port(network_id=net.id)
    third = demo.network.create_port(network_id=net.id)
    assert {second.fixed_ips[0]["ip_address"], third.fixed_ips[0]["ip_address"]} == {"10.4.0.10", "10.4.0.11"}
    with pytest.raises(exceptions.ConflictException, match="No more IP addresses"):
        demo.network.create_port(network_id=net.id)
    router = demo.network.create_router(name="r4")
    with pytest.raises(exceptions.BadRequestException, match="must have a gateway IP"):
        demo.network.add_interface_to_router(router, subnet=subnet.id)
    for port in (first, second, third):
        demo.network.delete_port(port)
    demo.network.delete_router(router)
    demo.network.delete_network(net)
