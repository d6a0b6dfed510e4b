"""Users for an embedded nats-server: fresh passwords, a configuration file only the owner reads.

``ember dev`` and the tests' authenticated server start nats-server with this
file; each service then connects as its own user with the password handed to
it, and nothing connects anonymously.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path

from libs.messaging import permissions, server_auth
from libs.messaging.subjects import SERVICES, Names

CONFIG_NAME = "auth.conf"
USERS_NAME = "users.json"


@dataclasses.dataclass(frozen=True)
class Credential:
    user: str
    password: str
    # Where its requests' replies arrive: the only inboxes it may subscribe to.
    inbox_prefix: str

    def env(self) -> dict[str, str]:
        """The variables a process connects as this user with."""
        return {"EMBER_NATS_USER": self.user, "EMBER_NATS_PASSWORD": self.password}


@dataclasses.dataclass(frozen=True)
class NatsAuth:
    config: Path
    # By user: each service's, "admin" and one per project (server_auth.project_user).
    credentials: dict[str, Credential]

    def service(self, service: str) -> Credential:
        return self.credentials[server_auth.service_user(service)]

    def project(self, project: str) -> Credential:
        return self.credentials[server_auth.project_user(project)]

    @property
    def admin(self) -> Credential:
        return self.credentials[server_auth.ADMIN]


def write(directory: Path, names: Names, projects: Iterable[str] = ()) -> NatsAuth:
    """Write ``auth.conf`` (for nats-server) and ``users.json`` (for people) with new passwords."""
    projects = tuple(projects)
    users = server_auth.users(names, {}, projects, from_env=True)
    passwords = {u.name: server_auth.new_password() for u in users}
    literal = server_auth.users(names, passwords, projects)
    inboxes = {server_auth.service_user(s): permissions.inbox_prefix(names, s)
               for s in SERVICES}
    inboxes |= {server_auth.project_user(p): permissions.inbox_prefix(names, permissions.project_principal(p))
                for p in projects}
    inboxes[server_auth.ADMIN] = permissions.inbox_prefix(names, server_auth.ADMIN)
    credentials = {u.name: Credential(u.name, passwords[u.name], inboxes[u.name]) for u in literal}
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / CONFIG_NAME
    _private(config, server_auth.render(literal, header="Written by Ember for its embedded nats-server."))
    _private(directory / USERS_NAME, json.dumps({u: dataclasses.asdict(c) for u, c in credentials.items()},
                                                indent=2) + "\n")
    return NatsAuth(config=config, credentials=credentials)


def _private(path: Path, text: str) -> None:
    staging = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    staging.replace(path)
