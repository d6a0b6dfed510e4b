"""The ``authorization`` block of a nats-server configuration, from the permission table.

``ember dev`` writes it with generated passwords; ``compose/nats/ember.conf``
is the same text with each password a reference to an environment variable
(nats-server looks an undefined ``$NAME`` up in its environment), so the
committed file holds no secret. Anonymous connections are refused: there is
no ``no_auth_user``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable

from libs.messaging import permissions
from libs.messaging.permissions import Permissions
from libs.messaging.subjects import SERVICES, Names

ADMIN = "admin"
_VAR_RE = re.compile(r"[^A-Z0-9]+")


@dataclasses.dataclass(frozen=True)
class User:
    name: str
    # A literal password, or (``from_env``) the name of the variable that holds it.
    password: str
    # None: every subject (an operator's user, for the nats CLI).
    permissions: Permissions | None
    from_env: bool = False


def password_variable(user: str) -> str:
    """``EMBER_NATS_PASSWORD_<USER>``: where compose keeps a user's password."""
    return "EMBER_NATS_PASSWORD_" + _VAR_RE.sub("_", user.upper()).strip("_")


def service_user(service: str) -> str:
    return service


def project_user(project: str) -> str:
    return permissions.project_principal(project)


def users(names: Names, passwords: dict[str, str], projects: Iterable[str] = (), *,
          admin: bool = True, from_env: bool = False) -> list[User]:
    """Every service's user, an operator's, and one per project; ``passwords`` by user name.

    With ``from_env``, ``passwords`` is ignored and each password is the
    variable :func:`password_variable` names.
    """
    wanted: list[tuple[str, Permissions | None]] = [
        (service_user(s), permissions.service_permissions(names, s)) for s in SERVICES]
    wanted += [(project_user(p), permissions.project_permissions(names, p)) for p in projects]
    if admin:
        wanted.append((ADMIN, None))
    return [User(name, password_variable(name) if from_env else passwords[name], perms, from_env)
            for name, perms in wanted]


def render(users: Iterable[User], *, header: str = "") -> str:
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += ["authorization {", "  users = ["]
    for user in users:
        password = f"${user.password}" if user.from_env else json.dumps(user.password)
        lines.append(f"    {{user: {json.dumps(user.name)}, password: {password}")
        if user.permissions is not None:
            p = user.permissions
            lines.append("     permissions: {")
            lines.append(f"       publish: {_rule(p.publish)}")
            lines.append(f"       subscribe: {_rule(p.subscribe)}")
            if p.allow_responses:
                lines.append("       allow_responses: true")
            lines.append("     }")
        lines.append("    }")
    lines += ["  ]", "}", ""]
    return "\n".join(lines)


def _rule(subjects: tuple[str, ...]) -> str:
    # An empty allow list would restrict nothing: nothing allowed is a deny of everything.
    if not subjects:
        return '{deny: [">"]}'
    return f"{{allow: {_list(subjects)}}}"


def _list(subjects: Iterable[str]) -> str:
    return "[" + ", ".join(json.dumps(s) for s in subjects) + "]"
