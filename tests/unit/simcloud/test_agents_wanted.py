"""Which simulated servers have an agent: the ACTIVE ones booted for software config, by their user data."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from libs.resources.user_data import build_user_data
from libs.simcloud.agents import (
    AgentSettings,
    Wanted,
    argv,
    closed_to_others,
    environment_of,
    nats_login,
    project_of,
    settings_of,
    stack_user_of,
    wanted,
)


def _user_data(metadata: dict[str, Any] | None, fmt: str = "SOFTWARE_CONFIG", text: str = "") -> str:
    return base64.b64encode(build_user_data(fmt, text, metadata).encode()).decode()


HEAT = {"os-collect-config": {"heat": {"project_id": "demo", "stack_id": "s", "resource_name": "server"}}}


@pytest.mark.parametrize(("user_data", "project"), [
    (_user_data(HEAT), "demo"),
    (_user_data(HEAT, text="#!/bin/sh\necho the user's own part"), "demo"),
    (_user_data({"os-collect-config": {"ember": {"project_id": "ops"}}}), "ops"),
    (_user_data({}), None),  # software config without a collector: nothing to poll
    (_user_data(None, fmt="RAW", text="#!/bin/sh\necho hi"), None),
    (_user_data(None, fmt="HEAT_CFNTOOLS", text="#!/bin/sh\necho hi"), None),
    (base64.b64encode(b"\xff\xfe").decode(), None),
    ("not base64!", None),
    (None, None),
])
def test_the_project_comes_from_the_software_config_metadata(user_data: str | None,
                                                              project: str | None) -> None:
    assert project_of(user_data) == project


def test_only_active_servers_booted_for_software_config_have_an_agent() -> None:
    booted = _user_data(HEAT)
    servers = [("a", "ACTIVE", booted), ("b", "BUILD", booted), ("c", "SHUTOFF", booted),
               ("d", "ACTIVE", _user_data(None, fmt="RAW", text="x")), ("e", "ERROR", booted)]
    assert wanted(servers) == {"a": Wanted("a", "demo")}


def test_an_agent_polls_its_project_and_keeps_its_journal_in_its_servers_folder(tmp_path: Path) -> None:
    command = argv(AgentSettings(api_url="http://127.0.0.1:8004", root=tmp_path), Wanted("srv", "demo"))
    assert command[command.index("--workdir") + 1] == str(tmp_path / "srv")
    assert command[command.index("--project") + 1] == "demo"
    assert command[command.index("--server-id") + 1] == "srv"


def test_an_agent_is_told_of_nats_when_the_simulator_knows_it(tmp_path: Path) -> None:
    given = settings_of("http://127.0.0.1:8004/", str(tmp_path), nats_url="nats://127.0.0.1:4222",
                        nats_prefix="dev", nats_users=str(tmp_path / "users.json"))
    assert given is not None and given.nats_users == tmp_path / "users.json"
    command = argv(given, Wanted("srv", "demo"))
    assert command[command.index("--nats-url") + 1] == "nats://127.0.0.1:4222"
    assert command[command.index("--nats-prefix") + 1] == "dev"
    # A project with no NATS user: no NATS at all (it polls; NATS_SIGNAL is given up saying why).
    assert "--nats-url" not in argv(given, Wanted("srv", "demo"), nats=False)
    assert "--nats-url" not in argv(AgentSettings(api_url="http://a", root=tmp_path), Wanted("srv", "demo"))


@pytest.mark.parametrize(("users", "project", "login"), [
    ({"project.demo": {"user": "project.demo", "password": "pw", "inbox_prefix": "_INBOX.e.project.demo"}},
     "demo", {"EMBER_AGENT_NATS_USER": "project.demo", "EMBER_AGENT_NATS_PASSWORD": "pw"}),
    ({"project.demo": {"user": "project.demo", "password": "pw"}}, "ops", None),
    ({"project.a%2Eb": {"user": "project.a%2Eb", "password": "pw"}}, "a.b",
     {"EMBER_AGENT_NATS_USER": "project.a%2Eb", "EMBER_AGENT_NATS_PASSWORD": "pw"}),
    ({}, "demo", None),
])
def test_an_agent_connects_as_its_project_s_nats_user(users: dict[str, Any], project: str,
                                                      login: dict[str, str] | None) -> None:
    assert nats_login(users, project) == login


def test_a_folder_closed_to_other_users_is_named(tmp_path: Path) -> None:
    closed = tmp_path / "data"
    (closed / "servers").mkdir(parents=True)
    closed.chmod(0o700)
    assert closed_to_others(closed / "servers") == closed
    closed.chmod(0o711)
    tmp_path.chmod(0o711)
    assert closed_to_others(closed / "servers") not in (closed / "servers", closed, tmp_path)


def test_an_agent_is_given_its_servers_stack_user_as_variables(tmp_path: Path) -> None:
    booted = _user_data({"os-collect-config": {"heat": {**HEAT["os-collect-config"]["heat"],
                                                        "user_id": "u1", "password": "pw"}}})
    assert stack_user_of(booted) == ("u1", "pw") and stack_user_of(_user_data(HEAT)) is None
    [want] = wanted([("a", "ACTIVE", booted)]).values()
    assert want == Wanted("a", "demo", ("u1", "pw"))
    # Not on its command line, which any user of the machine may read.
    assert "pw" not in argv(AgentSettings(api_url="http://127.0.0.1:8004", root=tmp_path), want)
    env = environment_of(want)
    assert (env["EMBER_AGENT_USER_ID"], env["EMBER_AGENT_PASSWORD"]) == ("u1", "pw")
