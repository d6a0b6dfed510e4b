"""The passwords of the one-machine cloud: made once per data directory, kept 0600 beside it."""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
from pathlib import Path

# Keystone users: the people of clouds.yaml and one per service (keystonemiddleware, Nova's calls...).
PEOPLE = ("admin", "demo")
SERVICE_USERS = ("glance", "placement", "nova", "neutron", "cinder")


@dataclasses.dataclass(frozen=True)
class Credentials:
    passwords: dict[str, str]

    def password(self, user: str) -> str:
        return self.passwords[user]


def load_or_make(path: Path) -> Credentials:
    """The passwords kept at ``path``; any user missing there gets a fresh one, written back."""
    kept: dict[str, str] = json.loads(path.read_text()) if path.exists() else {}
    wanted = {user: kept.get(user) or secrets.token_urlsafe(18) for user in (*PEOPLE, *SERVICE_USERS)}
    if wanted != kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(wanted, out, indent=1)
    return Credentials(wanted)
