"""bench.cloud's pure parts: the stack it submits, the calls it reads from a worker's log, its tables."""

from __future__ import annotations

import collections
import ipaddress
from pathlib import Path

import orjson
import pytest

from bench.cloud import template
from bench.cloud_report import Phase, calls_logged, tables


@pytest.mark.parametrize(("servers", "networks"), [(1, 1), (20, 4), (7, 3), (1000, 200), (300, 260)])
def test_the_template_has_a_port_per_server_and_a_subnet_per_network(servers: int, networks: int) -> None:
    resources = template(servers, networks)["resources"]
    types = collections.Counter(r["type"] for r in resources.values())
    assert types == {"OS::Neutron::Net": networks, "OS::Neutron::Subnet": networks,
                     "OS::Neutron::Port": servers, "OS::Nova::Server": servers}
    cidrs = [ipaddress.ip_network(r["properties"]["cidr"]) for r in resources.values()
             if r["type"] == "OS::Neutron::Subnet"]
    assert len(set(cidrs)) == networks
    for i in range(servers):
        assert resources[f"server-{i}"]["properties"]["networks"] == [{"port": {"get_resource": f"port-{i}"}}]
        assert resources[f"port-{i}"]["properties"]["network"] == {"get_resource": f"net-{i % networks}"}


def test_the_calls_are_read_from_the_line_a_worker_logs_when_it_stops(tmp_path: Path) -> None:
    log = tmp_path / "worker1.log"
    lines = [{"msg": "ack work"}, {"msg": "cloud calls made: 3 in all",
                                   "calls_made": {"compute.create_server": 2, "network.create_port": 1}}]
    log.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\nnot json\n")
    assert calls_logged(log) == {"compute.create_server": 2, "network.create_port": 1}
    assert calls_logged(tmp_path / "absent.log") == {}


def test_the_tables_give_calls_per_server() -> None:
    phase = Phase("create", 10.0, 1.0, collections.Counter({"compute.create_server": 4}),
                  {"worker1": 100.0, "nats": None}, {"worker1": 2.5, "nats": None})
    text = tables([phase], 4)
    assert "compute.create_server" in text and "1.00" in text
    assert "0.4" in text  # servers per second
    assert "2.5" in text and "-" in text
