"""compose/compose.yaml: valid against the Compose Specification, and the topology DESIGN.md names."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from libs.messaging import server_auth
from libs.messaging.subjects import SERVICES, Names

COMPOSE = Path(__file__).resolve().parents[2] / "compose" / "compose.yaml"


def _compose() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())
    return data


def test_valid_against_the_compose_specification_schema() -> None:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool is not None, "check-jsonschema is a test dependency"
    result = subprocess.run([tool, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_three_node_jetstream_cluster_routed_to_each_other() -> None:
    services = _compose()["services"]
    nodes = [f"nats-{i}" for i in (1, 2, 3)]
    for node in nodes:
        command = services[node]["command"]
        assert "-js" in command
        assert command[command.index("-n") + 1] == node
        routes = command[command.index("--routes") + 1].split(",")
        assert sorted(routes) == sorted(f"nats-route://{n}:6222" for n in nodes)


def test_every_service_runs_with_replicas_against_the_cluster() -> None:
    services = _compose()["services"]
    for name in SERVICES:
        service = services[name]
        assert service["command"] == ["ember", name]
        assert service["deploy"]["replicas"] >= 1
        env = service["environment"]
        assert env["EMBER_NATS_REPLICAS"] == "3"
        assert sorted(env["EMBER_NATS_URL"].split(",")) == [f"nats://nats-{i}:4222" for i in (1, 2, 3)]
        assert env["EMBER_DATABASE_URL"].startswith("postgresql://")
        assert env["EMBER_OTLP_ENDPOINT"].startswith("http://otel-collector")
    assert services["worker"]["deploy"]["replicas"] >= 2
    assert {"postgres", "otel-collector", "jaeger"} <= set(services)


def test_published_ports_are_loopback_only() -> None:
    for name, service in _compose()["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)


def test_nats_runs_with_the_generated_users_and_each_service_connects_as_its_own() -> None:
    services = _compose()["services"]
    config = COMPOSE.parent / "nats" / "auth.conf"
    # Generated from the permission table, so it cannot drift from the subjects the code uses.
    assert config.read_text() == server_auth.config_from_env(Names())
    users = {u.name for u in server_auth.users(Names(), {}, from_env=True)}
    for node in (f"nats-{i}" for i in (1, 2, 3)):
        command = services[node]["command"]
        assert command[command.index("-c") + 1] == "/etc/nats/auth.conf"
        assert "./nats/auth.conf:/etc/nats/auth.conf:ro" in services[node]["volumes"]
        assert set(services[node]["environment"]) == {server_auth.password_variable(u) for u in users}
    for name in SERVICES:
        env = services[name]["environment"]
        assert env["EMBER_NATS_USER"] == server_auth.service_user(name)
        variable = server_auth.password_variable(name)
        assert env["EMBER_NATS_PASSWORD"].startswith(f"${{{variable}:?")
