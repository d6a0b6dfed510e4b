"""The users, projects and roles of keystone mode, read once from ``EMBER_AUTH_CONFIG`` (YAML).

::

    projects:
      - name: demo               # id: optional; by default a stable id made from the name
    users:
      - name: alice              # id: optional, as for projects
        password: secret
        roles: {demo: [member]}  # project name -> role names (member, reader, admin...)

Everything is in the ``Default`` domain. A bad file (unknown or misspelt
field, missing name or password, a role on a project not listed, a name used
twice) stops the api at start with the file and the field named.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

_NAMESPACE = uuid.UUID("5b4f0b1e-3c2a-4e0e-9d61-6d9a2f1f7e00")


class AuthConfigError(ValueError):
    def __init__(self, path: Path, where: str, problem: str) -> None:
        super().__init__(f"{path}: {where}: {problem}")


@dataclasses.dataclass(frozen=True)
class Project:
    id: str
    name: str


@dataclasses.dataclass(frozen=True)
class User:
    id: str
    name: str
    password: str
    roles: Mapping[str, tuple[str, ...]]  # project id -> role names


@dataclasses.dataclass(frozen=True)
class AuthConfig:
    projects: Mapping[str, Project]  # by id
    users: Mapping[str, User]  # by id

    def project(self, *, id: str | None = None, name: str | None = None) -> Project | None:
        if id is not None:
            return self.projects.get(id)
        return next((p for p in self.projects.values() if p.name == name), None)

    def user(self, *, id: str | None = None, name: str | None = None) -> User | None:
        if id is not None:
            return self.users.get(id)
        return next((u for u in self.users.values() if u.name == name), None)


def stable_id(kind: str, name: str) -> str:
    """An id that stays the same across restarts and api processes: the config names it once."""
    return uuid.uuid5(_NAMESPACE, f"{kind}:{name}").hex


class _Reader:
    """Checks one file, naming the file and the field in every complaint."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, problem: str) -> AuthConfigError:
        return AuthConfigError(self.path, where, problem)

    def entries(self, data: Mapping[str, Any], key: str, fields: frozenset[str],
                *, required: bool) -> list[dict[str, Any]]:
        value = data.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list) or (required and not value):
            raise self.fail(key, "expected a list" + (" with at least one entry" if required else ""))
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                raise self.fail(f"{key}[{i}]", "expected a mapping")
            # A misspelt field would otherwise be dropped without a word.
            unknown = sorted(str(k) for k in item if k not in fields)
            if unknown:
                raise self.fail(f"{key}[{i}].{unknown[0]}",
                                f"unknown field (expected {', '.join(sorted(fields))})")
            for field in ("name", "id", "password"):
                if field in item and (not isinstance(item[field], str) or not item[field].strip()):
                    raise self.fail(f"{key}[{i}].{field}", "expected a non-empty string")
            if "name" not in item:
                raise self.fail(f"{key}[{i}].name", "is required")
        return value


_PROJECT_FIELDS = frozenset({"name", "id"})
_USER_FIELDS = frozenset({"name", "id", "password", "roles"})


def _parse(reader: _Reader, data: Any) -> AuthConfig:
    if not isinstance(data, dict):
        raise reader.fail("file", "expected a mapping with projects and users")
    unknown = sorted(str(k) for k in data if k not in ("projects", "users"))
    if unknown:
        raise reader.fail(unknown[0], "unknown field (expected projects, users)")
    projects: dict[str, Project] = {}
    by_name: dict[str, Project] = {}
    for i, item in enumerate(reader.entries(data, "projects", _PROJECT_FIELDS, required=False)):
        project = Project(id=item.get("id") or stable_id("project", item["name"]), name=item["name"])
        if project.name in by_name or project.id in projects:
            raise reader.fail(f"projects[{i}]",
                              f"a second project named {project.name!r} or with id {project.id!r}")
        projects[project.id] = by_name[project.name] = project
    users: dict[str, User] = {}
    names: set[str] = set()
    for i, item in enumerate(reader.entries(data, "users", _USER_FIELDS, required=True)):
        where = f"users[{i}]"
        if "password" not in item:
            raise reader.fail(f"{where}.password", "expected a string")
        roles = item.get("roles") or {}
        if not isinstance(roles, dict):
            raise reader.fail(f"{where}.roles", "expected a mapping of project name to a list of role names")
        assigned: dict[str, tuple[str, ...]] = {}
        for project_name, role_names in roles.items():
            if project_name not in by_name:
                raise reader.fail(f"{where}.roles.{project_name}", "no such project in projects")
            if not isinstance(role_names, list) or not role_names or not all(
                    isinstance(n, str) and n.strip() for n in role_names):
                raise reader.fail(f"{where}.roles.{project_name}", "expected a non-empty list of role names")
            assigned[by_name[project_name].id] = tuple(role_names)
        user = User(id=item.get("id") or stable_id("user", item["name"]), name=item["name"],
                    password=item["password"], roles=assigned)
        if user.name in names or user.id in users:
            raise reader.fail(where, f"a second user named {user.name!r} or with id {user.id!r}")
        names.add(user.name)
        users[user.id] = user
    return AuthConfig(projects=projects, users=users)


def load(path: Path) -> AuthConfig:
    """Read and check the file; :class:`AuthConfigError` names the file and the first bad field."""
    reader = _Reader(path)
    try:
        data = yaml.safe_load(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise reader.fail("file", str(exc)) from None
    return _parse(reader, data)
