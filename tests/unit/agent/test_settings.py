"""``ember agent``'s configuration (libs/agent/settings): options over variables, one line per bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from libs.agent.settings import load
from libs.config import ConfigError

BASE = {"EMBER_AGENT_API_URL": "http://127.0.0.1:8004/", "EMBER_AGENT_PROJECT": "demo",
        "EMBER_AGENT_SERVER_ID": "srv-1", "EMBER_AGENT_WORKDIR": "/var/lib/ember-agent"}


def test_variables_with_defaults_and_options_winning() -> None:
    settings = load({}, BASE, root=False)
    assert settings.metadata_url == "http://127.0.0.1:8004/v1/demo/software_deployments/metadata/srv-1"
    assert (settings.interval, settings.timeout, settings.user) == (30.0, 3600.0, "nobody")
    assert settings.token is None and settings.nats_url is None
    assert settings.workdir == Path("/var/lib/ember-agent") and settings.nats_prefix == "ember"
    chosen = load({"interval": "2", "token": "t", "server_id": "srv-2"},
                  {**BASE, "EMBER_AGENT_INTERVAL": "9", "EMBER_AGENT_TIMEOUT": "60"}, root=False)
    assert (chosen.interval, chosen.timeout, chosen.token, chosen.server_id) == (2.0, 60.0, "t", "srv-2")


@pytest.mark.parametrize(("given", "env", "named"), [
    ({}, {k: v for k, v in BASE.items() if k != "EMBER_AGENT_PROJECT"}, "--project (EMBER_AGENT_PROJECT)"),
    ({"api_url": "ftp://x"}, BASE, "--api-url (EMBER_AGENT_API_URL)"),
    ({"interval": "soon"}, BASE, "--interval (EMBER_AGENT_INTERVAL)"),
    ({"timeout": "0"}, BASE, "--timeout (EMBER_AGENT_TIMEOUT)"),
    ({"signal_attempts": "2.5"}, BASE, "--signal-attempts (EMBER_AGENT_SIGNAL_ATTEMPTS)"),
    ({"server_id": "a/b"}, BASE, "--server-id (EMBER_AGENT_SERVER_ID)"),
    ({"nats_url": "http://x"}, BASE, "--nats-url (EMBER_AGENT_NATS_URL)"),
    ({"nats_prefix": "Bad"}, BASE, "--nats-prefix (EMBER_AGENT_NATS_PREFIX)"),
])
def test_a_bad_value_names_its_option_and_variable(given: dict[str, str], env: dict[str, str],
                                                   named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load(given, env, root=False)
    assert caught.value.variable == named


def test_as_root_the_user_must_exist() -> None:
    with pytest.raises(ConfigError, match="no user 'no-such-user-here'"):
        load({"user": "no-such-user-here"}, BASE, root=True)
    assert load({}, BASE, root=True).user == "nobody"
