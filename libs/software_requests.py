"""What a ``software_configs`` or ``software_deployments`` request asks for, checked (pure).

Heat takes these bodies almost unchecked: a name that is a list, a server id
that is a number, ``input_values`` that are a string are stored as given, and a
missing server id or a name too long for its column is a 500 from the
database. Ember stores what Heat's own clients and resources send (text where
Heat's columns are text, maps where it reads maps) and refuses anything else
with a 400 naming the field; where Heat does check, its words are kept.

A name, group, action or status that the request leaves out is stored as
``""``, which the views show as Heat's null (as the empty ``output_values`` a
deployment has until outputs arrive); ``status_reason`` is Python's text of
whatever was sent, ``"None"`` included, exactly as Heat stores it.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Any, Final

from libs import software_config_io
from libs.template.errors import Invalid, MalformedRequest

# Heat's column sizes: past them its database refuses the row (a 500 there, a 400 here).
NAME_SIZE: Final = 255
SERVER_ID_SIZE: Final = 36
STACK_USER_PROJECT_SIZE: Final = 64
CONFIG_FIELDS: Final = ("name", "group", "config", "inputs", "outputs", "options")
# What PUT may change; Heat ignores every other key of the body, as it ignores falsy values.
CHANGEABLE: Final = ("config_id", "input_values", "output_values", "action", "status", "status_reason")


@dataclasses.dataclass(frozen=True)
class NewConfig:
    name: str
    group: str
    # Heat's stored form: {config, inputs, outputs, options}.
    config: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class NewDeployment:
    config_id: uuid.UUID | None  # None: names no config at all (Heat's 404)
    server_id: str | None  # None: none given (checked once the config is found, as Heat's order)
    input_values: dict[str, Any]
    action: str
    status: str
    status_reason: str
    stack_user_project_id: str


def body_object(body: Any) -> dict[str, Any]:
    """The body as a map; anything else is Heat's bare 400."""
    if not isinstance(body, dict):
        raise MalformedRequest()
    return body


def new_config(body: Mapping[str, Any]) -> NewConfig:
    options = body.get("options")
    if options is not None and not isinstance(options, Mapping):
        raise MalformedRequest("options: a map is expected")
    return NewConfig(
        name=_text(body, "name", NAME_SIZE), group=_text(body, "group", NAME_SIZE),
        config={"config": body.get("config"),
                "inputs": software_config_io.checked("inputs", body.get("inputs")),
                "outputs": software_config_io.checked("outputs", body.get("outputs")),
                "options": dict(options or {})})


def id_of(value: Any) -> uuid.UUID | None:
    """The id a body, path or query names; None when it cannot name one (to Heat: not found)."""
    if not isinstance(value, str):
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def new_deployment(body: Mapping[str, Any]) -> NewDeployment:
    user_project = body.get("stack_user_project_id")
    if user_project is not None and not isinstance(user_project, str):
        raise MalformedRequest("stack_user_project_id: a string is expected")
    if user_project is not None and len(user_project) > STACK_USER_PROJECT_SIZE:
        raise Invalid(f'"stack_user_project_id" should be no more than {STACK_USER_PROJECT_SIZE} characters')
    server_id = body.get("server_id")
    if server_id is not None:
        server_id = _text(body, "server_id", SERVER_ID_SIZE)
    return NewDeployment(
        config_id=id_of(body.get("config_id")), server_id=server_id,
        input_values=_map(body, "input_values"), action=_text(body, "action", NAME_SIZE),
        status=_text(body, "status", NAME_SIZE), status_reason=str(body.get("status_reason")),
        stack_user_project_id=user_project or "")


def require_server(deployment: NewDeployment) -> str:
    if deployment.server_id is None:
        raise MalformedRequest("server_id: the id of the server to deploy to is required")
    return deployment.server_id


def changes(body: Mapping[str, Any]) -> dict[str, Any]:
    """The columns a PUT changes: Heat's update leaves alone every field that is absent or falsy
    (an empty map, an empty string), so a deployment's config and values are never cleared;
    ``config_id`` stays the text sent, for the caller to look up."""
    found: dict[str, Any] = {}
    for key in CHANGEABLE:
        value = body.get(key)
        if not value:
            continue
        if key == "config_id":
            found[key] = value
        elif key == "status_reason":
            found[key] = str(value)
        elif key in ("input_values", "output_values"):
            found[key] = _map(body, key)
        else:
            found[key] = _text(body, key, NAME_SIZE)
    return found


def _text(body: Mapping[str, Any], key: str, size: int) -> str:
    value = body.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedRequest(f"{key}: a string is expected, not {type(value).__name__}")
    if len(value) > size:
        raise MalformedRequest(f"{key}: at most {size} characters are stored, not {len(value)}")
    return value


def _map(body: Mapping[str, Any], key: str) -> dict[str, Any]:
    value = body.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MalformedRequest(f"{key}: a map is expected, not {type(value).__name__}")
    return dict(value)
