"""Where the agent's stack user comes from (libs/agent/credentials, settings): options or server metadata."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from libs.agent.credentials import from_collect_config, password_auth
from libs.agent.settings import load
from libs.config import ConfigError

HEAT = {"user_id": "u1", "password": "pw", "auth_url": "http://api:8004/identity/v3", "project_id": "demo",
        "stack_id": "st/1", "resource_name": "server", "region_name": None}
BASE = {"EMBER_AGENT_API_URL": "http://api:8004", "EMBER_AGENT_SERVER_ID": "srv-1",
        "EMBER_AGENT_WORKDIR": "/var/lib/ember-agent"}


@pytest.mark.parametrize("raw", [
    {"os-collect-config": {"collectors": ["heat"], "heat": HEAT}, "deployments": []},  # cfn-init-data
    {"collectors": ["heat"], "heat": HEAT},  # the section alone
])
def test_the_stack_user_is_read_from_the_servers_metadata(raw: object) -> None:
    assert from_collect_config(json.dumps(raw).encode()) == {
        "user_id": "u1", "password": "pw", "auth_url": "http://api:8004/identity/v3", "project": "demo"}


def test_a_section_without_a_user_gives_nothing_and_junk_is_refused() -> None:
    assert from_collect_config(b'{"heat": {"user_id": null, "password": null}}') == {}
    assert from_collect_config(b"[]") == {}
    with pytest.raises(ValueError):
        from_collect_config(b"not json")


def test_the_token_request_is_keystones_password_auth_by_user_id() -> None:
    assert password_auth("u1", "pw", "demo") == {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"id": "u1", "password": "pw"}}},
        "scope": {"project": {"id": "demo"}}}}


def test_settings_take_the_collect_config_file_below_what_is_given(tmp_path: Path) -> None:
    path = tmp_path / "cfn-init-data"
    path.write_text(json.dumps({"os-collect-config": {"heat": HEAT}}))
    settings = load({"collect_config": str(path)}, BASE, root=False)
    assert (settings.user_id, settings.password, settings.project) == ("u1", "pw", "demo")
    assert settings.auth_url == "http://api:8004/identity/v3"
    given = load({"collect_config": str(path), "password": "other"}, {**BASE, "EMBER_AGENT_PROJECT": "p2"},
                 root=False)
    assert (given.password, given.project) == ("other", "p2")
    # With no file, tokens come from the API's own identity endpoint.
    plain = load({"user_id": "u1", "password": "pw"}, {**BASE, "EMBER_AGENT_PROJECT": "demo"}, root=False)
    assert plain.auth_url == "http://api:8004/identity/v3"


@pytest.mark.parametrize(("given", "named"), [
    ({"user_id": "u1"}, "--password (EMBER_AGENT_PASSWORD)"),
    ({"password": "pw"}, "--user-id (EMBER_AGENT_USER_ID)"),
    ({"auth_url": "keystone"}, "--auth-url (EMBER_AGENT_AUTH_URL)"),
    ({"collect_config": "/nonexistent/cfn-init-data"}, "--collect-config (EMBER_AGENT_COLLECT_CONFIG)"),
])
def test_a_half_given_user_or_a_bad_source_names_its_option(given: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(given, {**BASE, "EMBER_AGENT_PROJECT": "demo"}, root=False)
    assert named in str(caught.value)
