"""A derived config as the agent receives it: one item of a server's ``deployments`` metadata (pure).

Items have Heat's shape (``format_software_config``): ``id``, ``name``,
``group``, ``config``, ``inputs`` (each with ``name``, ``type``, ``value``...),
``outputs`` and ``options``, plus Ember's ``ember_hash``: a digest of all of
the item's derived data, so a config that changed in any way is a new one.
The hash is the key of everything the agent keeps (journal entry, run folder),
hence it must be a plain token; an item without one (Heat's own API) is keyed
by its id, as heat-config keys what it deployed.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping
from typing import Any

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
# A component names one config per set of actions; 55-heat-config picks the one for deploy_action.
COMPONENT_GROUP = "component"


class Refusal(enum.Enum):
    MALFORMED = "malformed"  # not an item of Heat's shape
    BAD_KEY = "bad_key"  # a hash (or id) that cannot name a folder
    NO_COMPONENT_CONFIG = "no_component_config"  # a component with nothing for this action


@dataclasses.dataclass(frozen=True)
class Refused:
    refusal: Refusal
    reason: str
    # What the item is known by in logs, as far as it could be read.
    label: str


@dataclasses.dataclass(frozen=True)
class Input:
    name: str
    type: str | None
    value: Any


@dataclasses.dataclass(frozen=True)
class DerivedConfig:
    key: str
    id: str
    name: str
    group: str
    inputs: tuple[Input, ...]
    # Declared output names, in order.
    outputs: tuple[str, ...]
    # The item as a hook gets it (Heat's hooks read it as JSON on stdin): inputs sanitised and,
    # for a component, the chosen config and tool in place of the component's.
    document: Mapping[str, Any]

    def value(self, name: str, default: Any = None) -> Any:
        """The value of the input ``name`` (the last one of that name, as a dict of them would keep)."""
        found = default
        for item in self.inputs:
            if item.name == name:
                found = item.value
        return found

    @property
    def values(self) -> dict[str, Any]:
        return {item.name: item.value for item in self.inputs}

    @property
    def action(self) -> str | None:
        action = self.value("deploy_action")
        return action if isinstance(action, str) else None


def _label(item: Mapping[str, Any]) -> str:
    return str(item.get("name") or item.get("id") or "?")[:200]


def _sanitised_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    # A String input given a number arrives as a number (Heat bug 1333992); hooks get text.
    value = raw.get("value")
    if raw.get("type") == "String" and not isinstance(value, str):
        value = "" if value is None else str(value)
    return {**raw, "value": value}


def parse(item: Any) -> DerivedConfig | Refused:
    """One metadata item, or why the agent cannot take it."""
    if not isinstance(item, Mapping):
        return Refused(Refusal.MALFORMED, "an item is not an object", "?")
    label = _label(item)
    config_id, raw_inputs, raw_outputs = item.get("id"), item.get("inputs") or [], item.get("outputs") or []
    if not isinstance(config_id, str) or not config_id:
        return Refused(Refusal.MALFORMED, "it has no id", label)
    if not isinstance(raw_inputs, list) or not all(
            isinstance(i, Mapping) and isinstance(i.get("name"), str) for i in raw_inputs):
        return Refused(Refusal.MALFORMED, "its inputs are not a list of named inputs", label)
    if not isinstance(raw_outputs, list) or not all(
            isinstance(o, Mapping) and isinstance(o.get("name"), str) for o in raw_outputs):
        return Refused(Refusal.MALFORMED, "its outputs are not a list of named outputs", label)
    group = item.get("group")
    if not isinstance(group, str):
        return Refused(Refusal.MALFORMED, "its group is not a string", label)
    key = item.get("ember_hash", config_id)
    if not isinstance(key, str) or not _KEY.match(key):
        return Refused(Refusal.BAD_KEY, f"its hash {str(key)[:80]!r} is not a plain token", label)
    inputs = [_sanitised_input(i) for i in raw_inputs]
    document = {**item, "inputs": inputs}
    parsed = DerivedConfig(
        key=key, id=config_id, name=str(item.get("name") or config_id), group=group,
        inputs=tuple(Input(str(i["name"]), i.get("type"), i.get("value")) for i in inputs),
        outputs=tuple(str(o["name"]) for o in raw_outputs), document=document)
    return _component(parsed) if group == COMPONENT_GROUP else parsed


def _component(config: DerivedConfig) -> DerivedConfig | Refused:
    """The part of a component that runs for this action, as a config of that part's tool."""
    action = config.action
    body = config.document.get("config")
    parts = body.get("configs") if isinstance(body, Mapping) else None
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, Mapping):
            continue
        actions = part.get("actions")
        tool = part.get("tool")
        if isinstance(actions, list) and action in actions and isinstance(tool, str):
            document = {**config.document, "config": part.get("config"), "group": tool}
            return dataclasses.replace(config, group=tool, document=document)
    return Refused(Refusal.NO_COMPONENT_CONFIG,
                   f"the component has no config for action {action}", config.name)
