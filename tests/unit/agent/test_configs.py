"""Reading a derived config (libs/agent/configs): keys, Heat's input sanitising, components, refusals."""

from __future__ import annotations

from typing import Any

import pytest

from libs.agent.configs import DerivedConfig, Refusal, Refused, parse
from tests.agent_items import item


def test_the_key_is_the_ember_hash() -> None:
    config = parse(item("one", key="f" * 64))
    assert isinstance(config, DerivedConfig)
    assert (config.key, config.name, config.group) == ("f" * 64, "one", "script")
    assert config.value("deploy_action") == "CREATE"


def test_without_a_hash_the_key_is_the_id_as_heat_config_keys_it() -> None:
    body = item("one")
    del body["ember_hash"]
    config = parse(body)
    assert isinstance(config, DerivedConfig) and config.key == body["id"]


@pytest.mark.parametrize("key", ["../../etc", "a/b", "", "x" * 129, 42])
def test_a_hash_that_cannot_name_a_folder_is_refused(key: Any) -> None:
    body = {**item("one"), "ember_hash": key}
    refused = parse(body)
    assert isinstance(refused, Refused) and refused.refusal is Refusal.BAD_KEY


@pytest.mark.parametrize(("body", "why"), [
    ("text", "an item is not an object"),
    ({"name": "n", "group": "script"}, "it has no id"),
    ({"id": "i", "group": "script", "inputs": {"a": 1}}, "its inputs are not a list of named inputs"),
    ({"id": "i", "group": "script", "outputs": [{"type": "String"}]},
     "its outputs are not a list of named outputs"),
    ({"id": "i", "group": None}, "its group is not a string"),
])
def test_malformed_items(body: Any, why: str) -> None:
    refused = parse(body)
    assert isinstance(refused, Refused) and (refused.refusal, refused.reason) == (Refusal.MALFORMED, why)


def test_a_string_input_given_a_number_reaches_hooks_as_text() -> None:
    body = item("one")
    body["inputs"].append({"name": "port", "type": "String", "value": 8080})
    body["inputs"].append({"name": "count", "type": "Number", "value": 3})
    config = parse(body)
    assert isinstance(config, DerivedConfig)
    assert (config.value("port"), config.value("count")) == ("8080", 3)
    assert {i["name"]: i["value"] for i in config.document["inputs"]}["port"] == "8080"


def test_a_component_runs_its_config_for_the_action_with_that_config_s_tool() -> None:
    component = {"configs": [{"actions": ["CREATE", "UPDATE"], "config": "#!/bin/sh\necho made",
                              "tool": "script"},
                             {"actions": ["DELETE"], "config": "- hosts: all", "tool": "ansible"}]}
    made = parse(item("c", component, group="component", derived={"deploy_action": "UPDATE"}))
    assert isinstance(made, DerivedConfig)
    assert (made.group, made.document["config"], made.document["group"]) == (
        "script", "#!/bin/sh\necho made", "script")
    gone = parse(item("c", component, group="component", derived={"deploy_action": "DELETE"}))
    assert isinstance(gone, DerivedConfig) and gone.group == "ansible"
    nothing = parse(item("c", component, group="component", derived={"deploy_action": "SUSPEND"}))
    assert isinstance(nothing, Refused) and nothing.refusal is Refusal.NO_COMPONENT_CONFIG
