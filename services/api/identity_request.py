"""The body of ``POST /identity/v3/auth/tokens``, read into what it asks for (pure).

Only the shapes keystoneauth and openstackclient send are taken: the
``password`` method (user by id, or by name and domain) or the ``token``
method, and an optional project scope (by id, or by name and domain).
A body of another shape is a :class:`MalformedAuth` (Keystone's 400).
Everything lives in the ``Default`` domain, so a user or project named in any
other domain is :attr:`AuthRequest.foreign` (Keystone's 401: no such user).
"""

from __future__ import annotations

import dataclasses
from typing import Any

DEFAULT_DOMAIN_ID = "default"
DEFAULT_DOMAIN_NAME = "Default"


class MalformedAuth(ValueError):
    """The body is not a v3 auth request; the message says what is missing."""


@dataclasses.dataclass(frozen=True)
class Ref:
    """A user or project as the request names it: by id, or by name."""

    id: str | None
    name: str | None


@dataclasses.dataclass(frozen=True)
class AuthRequest:
    methods: tuple[str, ...]
    user: Ref | None  # the password method's user
    password: str | None
    token: str | None  # the token method's token
    project: Ref | None  # None: no scope asked
    foreign: bool  # a domain other than Default was named


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise MalformedAuth(f"Expecting to find {where} in the request body.")
    return value


def _text(value: Any, where: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedAuth(f"Invalid input for field '{where}': expected a string.")
    return value


def _in_default_domain(entity: dict[str, Any], where: str) -> bool:
    if entity.get("domain") is None:
        return True
    domain = _mapping(entity["domain"], f"{where}.domain")
    domain_id = _text(domain.get("id"), f"{where}.domain.id")
    domain_name = _text(domain.get("name"), f"{where}.domain.name")
    # Domain names are matched without case, as Keystone on MySQL does.
    return ((domain_id is None or domain_id == DEFAULT_DOMAIN_ID)
            and (domain_name is None or domain_name.lower() == DEFAULT_DOMAIN_NAME.lower()))


def _ref(entity: dict[str, Any], where: str) -> Ref:
    ref = Ref(id=_text(entity.get("id"), f"{where}.id"), name=_text(entity.get("name"), f"{where}.name"))
    if ref.id is None and ref.name is None:
        raise MalformedAuth(f"Expecting to find id or name in {where}.")
    return ref


def parse(body: Any) -> AuthRequest:
    auth = _mapping(_mapping(body, "auth").get("auth"), "auth")
    identity = _mapping(auth.get("identity"), "identity")
    methods = identity.get("methods")
    if not isinstance(methods, list) or not methods or not all(isinstance(m, str) for m in methods):
        raise MalformedAuth("Expecting to find methods in identity.")
    foreign = False
    user = password = token = None
    if "password" in methods:
        given = _mapping(_mapping(identity.get("password"), "password").get("user"), "password.user")
        user = _ref(given, "user")
        foreign |= not _in_default_domain(given, "user")
        password = _text(given.get("password"), "user.password")
    if "token" in methods:
        token = _text(_mapping(identity.get("token"), "token").get("id"), "token.id")
        if token is None:
            raise MalformedAuth("Expecting to find id in token.")
    if user is None and token is None:
        raise MalformedAuth(f"Attempted to authenticate with an unsupported method: {', '.join(methods)}.")
    project = None
    scope = auth.get("scope")
    if scope is not None and scope != "unscoped":
        scope = _mapping(scope, "scope")
        if "project" not in scope:
            # A domain or system scope: nothing here may hold one.
            raise MalformedAuth("Only a project scope is supported.")
        wanted = _mapping(scope["project"], "scope.project")
        project = _ref(wanted, "project")
        foreign |= not _in_default_domain(wanted, "project")
    return AuthRequest(methods=tuple(methods), user=user, password=password, token=token,
                       project=project, foreign=foreign)
