"""The users, projects and roles of keystone mode, read once from ``EMBER_AUTH_CONFIG`` (YAML).

::

    projects:
      - name: demo               # id: optional; by default a stable id made from the name
    users:
      - name: alice
        password: secret
        roles: {demo: [member]}  # project name -> role names (member, reader, admin...)

Everything is in the ``Default`` domain. A bad file stops the api at start
with the file and the field named.
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
    users: Mapping[str, User]  # by name

    def project(self, *, id: str | None = None, name: str | None = None) -> Project | None:
        if id is not None:
            return self.projects.get(id)
        return next((p for p in self.projects.values() if p.name == name), None)


def stable_id(kind: str, name: str) -> str:
    return uuid.uuid5(_NAMESPACE, f"{kind}:{name}").hex


def _list(path: Path, data: Mapping[str, Any], key: str) -> list[Any]:
    value = data.get(key) or []
    if not isinstance(value, list):
        raise AuthConfigError(path, key, "expected a list")
    return value


def load(path: Path) -> AuthConfig:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise AuthConfigError(path, "file", str(exc)) from None
    if not isinstance(data, dict):
        raise AuthConfigError(path, "file", "expected a mapping with projects and users")
    projects: dict[str, Project] = {}
    for i, item in enumerate(_list(path, data, "projects")):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise AuthConfigError(path, f"projects[{i}]", "expected a mapping with a name")
        project = Project(id=str(item.get("id") or stable_id("project", item["name"])), name=item["name"])
        projects[project.id] = project
    by_name = {p.name: p for p in projects.values()}
    users: dict[str, User] = {}
    for i, item in enumerate(_list(path, data, "users")):
        where = f"users[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise AuthConfigError(path, where, "expected a mapping with a name")
        if not isinstance(item.get("password"), str):
            raise AuthConfigError(path, f"{where}.password", "expected a string")
        roles = item.get("roles") or {}
        if not isinstance(roles, dict):
            raise AuthConfigError(path, f"{where}.roles", "expected a mapping of project name to role names")
        assigned: dict[str, tuple[str, ...]] = {}
        for project_name, names in roles.items():
            if project_name not in by_name:
                raise AuthConfigError(path, f"{where}.roles.{project_name}", "no such project")
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise AuthConfigError(path, f"{where}.roles.{project_name}", "expected a list of role names")
            assigned[by_name[project_name].id] = tuple(names)
        users[item["name"]] = User(id=str(item.get("id") or stable_id("user", item["name"])),
                                   name=item["name"], password=item["password"], roles=assigned)
    return AuthConfig(projects=projects, users=users)
