"""Configuration: every EMBER_* variable parsed once, bad values named in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from libs import config


def test_defaults_match_heat_ports_and_local_data() -> None:
    settings = config.load({})
    assert (settings.api_host, settings.api_port) == ("127.0.0.1", 8004)
    assert settings.api_url == "http://127.0.0.1:8004"
    assert settings.data_dir == Path(".ember").resolve()
    assert settings.database_url is None and settings.nats_url is None
    assert settings.nats_prefix == "ember"
    assert settings.telemetry.exporter == "none"


@pytest.mark.parametrize(
    ("env", "field", "expected"),
    [
        ({"EMBER_API_BIND": "0.0.0.0:9000"}, "api_port", 9000),
        ({"EMBER_API_BIND": "[::1]:8004"}, "api_host", "::1"),
        ({"EMBER_DATABASE_URL": "postgresql://u@h/db"}, "database_url", "postgresql://u@h/db"),
        ({"EMBER_NATS_URL": "nats://a:4222,nats://b:4222"}, "nats_url", "nats://a:4222,nats://b:4222"),
        ({"EMBER_NATS_REPLICAS": "3"}, "nats_replicas", 3),
        ({"EMBER_REPORT_INTERVAL": "0.5"}, "report_interval", 0.5),
        ({"EMBER_LOG_LEVEL": "debug"}, "log_level", "DEBUG"),
        ({"EMBER_NATS_PREFIX": "ember_t1"}, "nats_prefix", "ember_t1"),
        ({"EMBER_NATS_USER": "worker", "EMBER_NATS_PASSWORD": "s3"}, "nats_user", "worker"),
        ({"EMBER_NATS_PROJECTS": "demo, ops,"}, "nats_projects", ("demo", "ops")),
        ({"EMBER_READY_TIMEOUT": "600"}, "ready_timeout", 600.0),
        ({"EMBER_READY_TIMEOUT": "0"}, "ready_timeout", None),  # no limit but the stack's timeout
        ({}, "ready_timeout", None),
        ({}, "dev_agents", True),
        ({"EMBER_DEV_AGENTS": "off"}, "dev_agents", False),
    ],
)
def test_values_are_parsed(env: dict[str, str], field: str, expected: object) -> None:
    assert getattr(config.load(env), field) == expected


def test_heats_software_limits_default_to_heats_and_minus_one_lifts_them() -> None:
    api = config.load({}).api
    assert (api.max_software_configs_per_tenant, api.max_software_deployments_per_tenant) == (4096, 4096)
    lifted = config.load({"EMBER_MAX_SOFTWARE_CONFIGS_PER_TENANT": "-1",
                          "EMBER_MAX_SOFTWARE_DEPLOYMENTS_PER_TENANT": "0"}).api
    assert (lifted.max_software_configs_per_tenant, lifted.max_software_deployments_per_tenant) == (-1, 0)


def test_heats_event_purge_defaults_to_heats_and_zero_or_minus_one_keep_every_event() -> None:
    assert config.load({}).event_retention == config.EventRetention(max_events=1000, purge_batch=200)
    for keep_all in ("0", "-1"):
        assert config.load({"EMBER_MAX_EVENTS_PER_STACK": keep_all}).event_retention.keeps_all
        assert config.load({"EMBER_MAX_EVENTS_PER_STACK": keep_all}).event_retention.kept_after(5, 40) == 45
    small = config.load({"EMBER_MAX_EVENTS_PER_STACK": "100", "EMBER_EVENT_PURGE_BATCH_SIZE": "300"})
    assert (small.event_retention.max_events, small.event_retention.purge_batch) == (100, 300)
    for variable, bad in (("EMBER_MAX_EVENTS_PER_STACK", "-2"), ("EMBER_EVENT_PURGE_BATCH_SIZE", "0")):
        with pytest.raises(config.ConfigError, match=variable):
            config.load({variable: bad})


@pytest.mark.parametrize(("max_events", "batch", "held", "written", "kept"), [
    # Heat 27.0.1, max_events_per_stack 10, event_purge_batch_size 1 or 2, 32 events written one
    # after another (a chain of 15 OS::Heat::None): the newest 10 are listed.
    (10, 1, 0, 32, 10), (10, 2, 0, 32, 10),
    # At the limit nothing goes: Heat purges before a write, when it finds the limit reached.
    (10, 2, 0, 10, 10), (10, 2, 0, 11, 9), (10, 4, 0, 11, 7),
    # A batch as large as the limit leaves the event written after it.
    (10, 200, 0, 11, 1), (10, 200, 0, 32, 2),
    # A stack over a lowered limit loses a batch before each write.
    (10, 2, 30, 1, 29), (10, 2, 30, 12, 18), (10, 4, 30, 12, 10),
])
def test_heats_event_purge_keeps_what_heat_keeps_after_each_write(
        max_events: int, batch: int, held: int, written: int, kept: int) -> None:
    retention = config.EventRetention(max_events=max_events, purge_batch=batch)
    assert retention.kept_after(held, written) == kept
    # Published in rounds of any size, the count is the same.
    count = held
    for _ in range(written):
        count = retention.kept_after(count, 1)
    assert count == kept


def test_otlp_endpoint_alone_selects_the_otlp_exporter() -> None:
    telemetry = config.load({"EMBER_OTLP_ENDPOINT": "http://collector:4318"}).telemetry
    assert telemetry.exporter == "otlp"
    assert telemetry.otlp_endpoint == "http://collector:4318"


@pytest.mark.parametrize(
    ("env", "variable", "fragment"),
    [
        ({"EMBER_API_BIND": "8004"}, "EMBER_API_BIND", "HOST:PORT"),
        ({"EMBER_API_BIND": "localhost:99999"}, "EMBER_API_BIND", "HOST:PORT"),
        ({"EMBER_DATABASE_URL": "mysql://x"}, "EMBER_DATABASE_URL", "postgres://"),
        ({"EMBER_NATS_URL": "localhost:4222"}, "EMBER_NATS_URL", "nats://"),
        ({"EMBER_NATS_REPLICAS": "0"}, "EMBER_NATS_REPLICAS", "from 1 to 5"),
        ({"EMBER_REPORT_INTERVAL": "soon"}, "EMBER_REPORT_INTERVAL", "number"),
        ({"EMBER_OTEL_EXPORTER": "zipkin"}, "EMBER_OTEL_EXPORTER", "one of"),
        ({"EMBER_OTEL_EXPORTER": "otlp"}, "EMBER_OTLP_ENDPOINT", "required"),
        ({"EMBER_OTEL_EXPORTER": "file"}, "EMBER_OTEL_FILE", "required"),
        ({"EMBER_NATS_PREFIX": "Ember.x"}, "EMBER_NATS_PREFIX", "lowercase"),
        ({"EMBER_LOG_LEVEL": "loud"}, "EMBER_LOG_LEVEL", "one of"),
        ({"EMBER_WORKER_CONCURRENCY": "-1"}, "EMBER_WORKER_CONCURRENCY", "whole number"),
        ({"EMBER_AUTH": "ldap"}, "EMBER_AUTH", "one of"),
        ({"EMBER_AUTH": "keystone"}, "EMBER_AUTH_CONFIG", "required"),
        ({"EMBER_MAX_JSON_BODY_SIZE": "big"}, "EMBER_MAX_JSON_BODY_SIZE", "whole number"),
        ({"EMBER_NATS_USER": "api"}, "EMBER_NATS_PASSWORD", "required"),
        ({"EMBER_NATS_PASSWORD": "s3"}, "EMBER_NATS_USER", "required"),
        ({"EMBER_MAX_SOFTWARE_CONFIGS_PER_TENANT": "-2"}, "EMBER_MAX_SOFTWARE_CONFIGS_PER_TENANT",
         "whole number"),
        ({"EMBER_MAX_SOFTWARE_DEPLOYMENTS_PER_TENANT": "many"}, "EMBER_MAX_SOFTWARE_DEPLOYMENTS_PER_TENANT",
         "whole number"),
    ],
)
def test_bad_values_name_the_variable(env: dict[str, str], variable: str, fragment: str) -> None:
    with pytest.raises(config.ConfigError) as info:
        config.load(env)
    assert info.value.variable == variable
    assert str(info.value).startswith(f"{variable}: ")
    assert fragment in str(info.value)


def test_settings_are_frozen() -> None:
    settings = config.load({})
    with pytest.raises(AttributeError):
        settings.api_port = 1  # type: ignore[misc]


@pytest.mark.parametrize("service", ["worker", "api"])
def test_a_service_with_a_bad_value_stops_at_start_with_one_line(service: str) -> None:
    env = {"PATH": "/usr/bin:/bin", "EMBER_API_BIND": "nowhere",
           "EMBER_DATABASE_URL": "postgresql://127.0.0.1:1/x", "EMBER_NATS_URL": "nats://127.0.0.1:1"}
    proc = subprocess.run([sys.executable, "-m", "libs.cli", service], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "EMBER_API_BIND" in lines[0]


@pytest.mark.parametrize(("content", "fragment"), [
    ("users: [{name: a}]\n", "users[0].password: expected a string"),
    ("projects: [{name: p}]\nusers: [{name: a, password: b, roles: {q: [member]}}]\n",
     "users[0].roles.q: no such project"),
    ("- just a list\n", "file: expected a mapping"),
])
def test_a_bad_auth_config_stops_the_api_naming_the_field(tmp_path: Path, content: str,
                                                          fragment: str) -> None:
    path = tmp_path / "auth.yaml"
    path.write_text(content)
    env = {"PATH": "/usr/bin:/bin", "EMBER_AUTH": "keystone", "EMBER_AUTH_CONFIG": str(path),
           "EMBER_DATABASE_URL": "postgresql://127.0.0.1:1/x", "EMBER_NATS_URL": "nats://127.0.0.1:1"}
    proc = subprocess.run([sys.executable, "-m", "libs.cli", "api"], env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and fragment in lines[0], proc.stderr


def test_the_nats_password_is_not_shown() -> None:
    assert "s3cret" not in repr(config.load({"EMBER_NATS_USER": "api", "EMBER_NATS_PASSWORD": "s3cret"}))
