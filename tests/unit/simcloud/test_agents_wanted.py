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
    project_of,
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
