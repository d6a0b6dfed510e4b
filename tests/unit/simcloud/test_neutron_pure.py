"""Neutron's pure parts: list queries, subnet address arithmetic, security group rules."""

from __future__ import annotations

from typing import Any

import pytest

from libs.simcloud.errors import ApiError
from libs.simcloud.neutron import ipam, listing, policy, secgroups
from libs.simcloud.neutron.bodies import Kind

NETS: list[dict[str, Any]] = [
    {"id": "c", "name": "b-net", "admin_state_up": True, "mtu": 1500, "tags": ["x", "blue"],
     "fixed_ips": [{"subnet_id": "s1", "ip_address": "10.0.0.3"}]},
    {"id": "a", "name": "a-net", "admin_state_up": False, "mtu": 1442, "tags": ["x"], "fixed_ips": []},
    {"id": "b", "name": "c-net", "admin_state_up": True, "mtu": 1442, "tags": [], "fixed_ips": []},
]


@pytest.mark.parametrize(("params", "ids"), [
    ({}, ["c", "a", "b"]),
    ({"name": ["a-net"]}, ["a"]),
    ({"name": ["a-net", "c-net"]}, ["a", "b"]),
    ({"admin_state_up": ["False"]}, ["a"]),
    ({"mtu": ["1442"]}, ["a", "b"]),
    ({"unknown_attr": ["1"]}, ["c", "a", "b"]),
    ({"tags": ["x"]}, ["c", "a"]),
    ({"tags": ["x,blue"]}, ["c"]),
    ({"tags-any": ["blue,none"]}, ["c"]),
    ({"not-tags": ["x,blue"]}, ["a", "b"]),
    ({"not-tags-any": ["x"]}, ["b"]),
    ({"fixed_ips": ["ip_address=10.0.0.3"]}, ["c"]),
    ({"sort_key": ["name"], "sort_dir": ["desc"]}, ["b", "c", "a"]),
    ({"sort_key": ["mtu", "name"], "sort_dir": ["asc", "desc"]}, ["b", "a", "c"]),
    ({"limit": ["2"]}, ["a", "b"]),
    ({"limit": ["2"], "marker": ["b"]}, ["c"]),
])
def test_list_answer(params: dict[str, list[str]], ids: list[str]) -> None:
    query = listing.parse(params)
    answer = listing.answer("networks", NETS, query, "http://x/v2.0/networks", params)
    assert [n["id"] for n in answer["networks"]] == ids


def test_next_link_only_while_more_remain() -> None:
    params = {"limit": ["2"], "name": ["x"]}
    query = listing.parse({"limit": ["2"]})
    first = listing.answer("networks", NETS, query, "http://x/v2.0/networks", params)
    assert first["networks_links"] == [{"rel": "next",
                                        "href": "http://x/v2.0/networks?limit=2&name=x&marker=b"}]
    last = listing.answer("networks", NETS, listing.parse({"limit": ["2"], "marker": ["b"]}), "u", params)
    assert "networks_links" not in last


def test_fields_project_the_answer() -> None:
    answer = listing.answer("networks", NETS, listing.parse({"fields": ["id", "name"]}), "u", {})
    assert answer["networks"][0] == {"id": "c", "name": "b-net"}


@pytest.mark.parametrize("params", [
    {"sort_key": ["name", "id"], "sort_dir": ["asc"]},
    {"sort_key": ["name"], "sort_dir": ["sideways"]},
    {"limit": ["-1"]},
    {"limit": ["ten"]},
    {"sort_key": ["nothing"]},
])
def test_bad_list_queries_are_400(params: dict[str, list[str]]) -> None:
    with pytest.raises(ApiError) as refused:
        listing.answer("networks", NETS, listing.parse(params), "u", params)
    assert refused.value.status == 400


@pytest.mark.parametrize(("cidr", "gateway", "pools"), [
    ("10.0.0.0/24", "10.0.0.1", [{"start": "10.0.0.2", "end": "10.0.0.254"}]),
    ("10.0.0.0/24", "10.0.0.254", [{"start": "10.0.0.1", "end": "10.0.0.253"}]),
    ("10.0.0.0/24", "10.0.0.100", [{"start": "10.0.0.1", "end": "10.0.0.99"},
                                   {"start": "10.0.0.101", "end": "10.0.0.254"}]),
    ("10.0.0.0/24", None, [{"start": "10.0.0.1", "end": "10.0.0.254"}]),
    ("fd00::/64", "fd00::1", [{"start": "fd00::2", "end": "fd00::ffff:ffff:ffff:ffff"}]),
])
def test_default_pools(cidr: str, gateway: str | None, pools: list[dict[str, str]]) -> None:
    net = ipam.parse_cidr(cidr, 6 if ":" in cidr else 4)
    assert ipam.default_pools(net, gateway) == pools
    if gateway in {"10.0.0.1", "fd00::1"}:
        assert ipam.default_gateway(net) == gateway


@pytest.mark.parametrize(("pools", "gateway", "status", "kind"), [
    ([{"start": "10.0.1.1", "end": "10.0.1.5"}], "10.0.0.1", 400, "OutOfBoundsAllocationPool"),
    ([{"start": "10.0.0.9", "end": "10.0.0.5"}], "10.0.0.1", 400, "InvalidAllocationPool"),
    ([{"start": "10.0.0.2", "end": "10.0.0.9"}, {"start": "10.0.0.5", "end": "10.0.0.20"}], "10.0.0.1", 400,
     "OverlappingAllocationPools"),
    ([{"start": "10.0.0.1", "end": "10.0.0.9"}], "10.0.0.1", 409, "GatewayConflictWithAllocationPools"),
])
def test_bad_pools(pools: list[dict[str, str]], gateway: str, status: int, kind: str) -> None:
    with pytest.raises(ApiError) as refused:
        ipam.check_pools(ipam.parse_cidr("10.0.0.0/24", 4), pools, gateway)
    assert (refused.value.status, refused.value.kind) == (status, kind)


def test_cidr_of_the_wrong_version_is_400() -> None:
    with pytest.raises(ApiError, match="not compatible"):
        ipam.parse_cidr("10.0.0.0/24", 6)


def test_default_rules() -> None:
    plain = secgroups.default_rules("g", is_default=False)
    assert [(r["direction"], r["ethertype"], r["remote_group_id"]) for r in plain] == [
        ("egress", "IPv4", None), ("egress", "IPv6", None)]
    default = secgroups.default_rules("g", is_default=True)
    assert sorted((r["direction"], r["ethertype"], r["remote_group_id"]) for r in default) == [
        ("egress", "IPv4", None), ("egress", "IPv6", None),
        ("ingress", "IPv4", "g"), ("ingress", "IPv6", "g")]


@pytest.mark.parametrize(("rule", "message"), [
    ({"direction": "sideways"}, "direction"),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 90, "port_range_max": 80},
     "<= port_range_max"),
    ({"direction": "ingress", "port_range_min": 22}, "Must also specify protocol"),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 70000}, "Invalid value for port"),
    ({"direction": "ingress", "protocol": "bogus"}, "not supported"),
    ({"direction": "ingress", "remote_ip_prefix": "10.0.0.0/8", "remote_group_id": "g"},
     "Only remote_ip_prefix"),
    ({"direction": "ingress", "ethertype": "IPv6", "remote_ip_prefix": "10.0.0.0/8"}, "Conflicting value"),
])
def test_rule_refusals(rule: dict[str, Any], message: str) -> None:
    with pytest.raises(ApiError, match=message) as refused:
        secgroups.normalise(rule)
    assert refused.value.status == 400


@pytest.mark.parametrize(("new", "duplicate"), [
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": "22", "port_range_max": "22"}, True),
    ({"direction": "ingress", "protocol": "6", "port_range_min": 22, "port_range_max": 22}, True),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 22, "port_range_max": 22,
      "remote_ip_prefix": "0.0.0.0/0"}, True),
    ({"direction": "ingress", "protocol": "tcp", "port_range_min": 22, "port_range_max": 23}, False),
    ({"direction": "egress", "protocol": "tcp", "port_range_min": 22, "port_range_max": 22}, False),
])
def test_duplicate_rules(new: dict[str, Any], duplicate: bool) -> None:
    existing = {**secgroups.normalise({"direction": "ingress", "protocol": "tcp", "port_range_min": 22,
                                       "port_range_max": 22}), "id": "r1"}
    if duplicate:
        with pytest.raises(ApiError, match="Rule id is r1") as refused:
            secgroups.check_duplicate(secgroups.normalise(new), [existing])
        assert refused.value.status == 409
    else:
        secgroups.check_duplicate(secgroups.normalise(new), [existing])


# Neutron's answers, as a member of the one-machine cloud got them (scripts/openstack_one_machine).
_REFUSED = "is disallowed by policy"


@pytest.mark.parametrize(("kind", "action", "request_body", "message"), [
    (Kind.NETWORK, policy.Action.CREATE, {"name": "n", "router:external": True},
     "(rule:create_network and rule:create_network:router:external) " + _REFUSED),
    (Kind.NETWORK, policy.Action.CREATE, {"shared": True},
     "(rule:create_network and rule:create_network:shared) " + _REFUSED),
    (Kind.NETWORK, policy.Action.CREATE, {"provider:network_type": "vxlan"},
     "(rule:create_network and rule:create_network:provider:network_type) " + _REFUSED),
    (Kind.NETWORK, policy.Action.CREATE, {"router:external": False, "shared": False}, None),
    (Kind.NETWORK, policy.Action.UPDATE, {"shared": False},
     "(rule:update_network and rule:update_network:shared) " + _REFUSED),
    (Kind.NETWORK, policy.Action.UPDATE, {"name": "x"}, None),
    (Kind.ROUTER, policy.Action.CREATE, {"ha": False},
     "(rule:create_router and rule:create_router:ha) " + _REFUSED),
    (Kind.ROUTER, policy.Action.CREATE, {"external_gateway_info": {"network_id": "p", "enable_snat": True}},
     "(rule:create_router and (rule:create_router:external_gateway_info and "
     "(rule:create_router:external_gateway_info:network_id and "
     "rule:create_router:external_gateway_info:enable_snat))) " + _REFUSED),
    (Kind.ROUTER, policy.Action.CREATE, {"external_gateway_info": {"network_id": "p"}}, None),
    (Kind.PORT, policy.Action.CREATE, {"network_id": "n", "binding:host_id": "h"},
     "(rule:create_port and rule:create_port:binding:host_id) " + _REFUSED),
])
def test_what_only_an_admin_may_set(kind: Kind, action: policy.Action, request_body: dict[str, Any],
                                    message: str | None) -> None:
    assert policy.refused(kind, action, request_body) == message
    if message is not None:
        with pytest.raises(ApiError) as refused:
            policy.check(kind, action, request_body, admin=False)
        assert refused.value.status == 403 and refused.value.kind == "PolicyNotAuthorized"
    policy.check(kind, action, request_body, admin=True)
