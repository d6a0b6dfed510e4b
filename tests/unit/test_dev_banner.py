"""What ``ember dev`` tells a person to try: the command that works in its auth mode."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from libs import config, dev


@pytest.mark.parametrize(("auth", "said", "not_said"), [
    ("noauth", ["--os-auth-type none", "--os-endpoint http://127.0.0.1:8004/v1/demo"], ["--os-username"]),
    ("keystone", ["a user of /etc/ember/users.yaml", "--os-auth-url http://127.0.0.1:8004/identity/v3",
                  "--os-username <user>"], ["--os-auth-type none", "noauth"]),
])
def test_the_banner_shows_the_command_of_its_auth_mode(auth: config.AuthMode, said: list[str],
                                                       not_said: list[str]) -> None:
    settings = config.load({})
    settings = dataclasses.replace(settings, api=dataclasses.replace(
        settings.api, auth=auth, auth_config=Path("/etc/ember/users.yaml") if auth == "keystone" else None))
    banner = dev._banner(settings, "postgresql://db", "nats://bus")
    assert all(s in banner for s in said), banner
    assert not any(s in banner for s in not_said), banner
