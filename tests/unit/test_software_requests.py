"""Software config and deployment bodies read as Heat reads them, and shown as Heat shows them (pure)."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

import pytest

from libs import software_requests, software_views
from libs.db.software_configs import ConfigRow
from libs.db.software_deployments import DeploymentRow
from libs.template.errors import Invalid, MalformedRequest

AT = datetime.datetime(2026, 11, 29, 4, 15, 22, 123456, tzinfo=datetime.UTC)


def test_a_put_changes_only_what_is_given_and_truthy() -> None:
    config_id = str(uuid.uuid4())
    body = {"config_id": config_id, "input_values": {}, "output_values": {"x": 1}, "action": "",
            "status": None, "status_reason": 0, "server_id": "elsewhere", "stack_user_project_id": "p"}
    assert software_requests.changes(body) == {"config_id": config_id, "output_values": {"x": 1}}
    assert software_requests.changes({"status_reason": {"why": 1}, "status": "FAILED"}) == {
        "status_reason": "{'why': 1}", "status": "FAILED"}
    assert software_requests.changes({}) == {}


def test_a_new_deployment_keeps_heats_reason_text_and_checks_the_stack_user_project() -> None:
    made = software_requests.new_deployment({"config_id": "nope", "server_id": "s"})
    assert (made.config_id, made.server_id, made.action, made.status, made.status_reason,
            made.stack_user_project_id, made.input_values) == (None, "s", "", "", "None", "", {})
    with pytest.raises(Invalid, match='"stack_user_project_id" should be no more than 64 characters'):
        software_requests.new_deployment({"stack_user_project_id": "p" * 65})
    with pytest.raises(MalformedRequest, match="server_id"):
        software_requests.require_server(software_requests.new_deployment({}))


@pytest.mark.parametrize("body, field", [({"name": 5}, "name"), ({"group": ["a"]}, "group"),
                                         ({"options": [1]}, "options"), ({"name": "n" * 256}, "name")])
def test_a_config_field_of_the_wrong_kind_is_refused_naming_it(body: dict[str, Any], field: str) -> None:
    with pytest.raises(MalformedRequest, match=f"^{field}: "):
        software_requests.new_config(body)


@pytest.mark.parametrize("value", [None, 5, "not-a-uuid", ["a"]])
def test_what_names_no_id(value: Any) -> None:
    assert software_requests.id_of(value) is None


def test_views_show_what_was_left_out_as_null_and_keys_in_heats_order() -> None:
    config = ConfigRow(id=uuid.uuid4(), project="p", name="", group="", created_at=AT, hash=None,
                       config={"config": None, "options": {},
                               "inputs": [{"type": "String", "value": 1, "name": "a", "description": "d"}],
                               "outputs": [{"error_output": False, "type": "String", "name": "o"}]})
    shown = software_views.config_view(config)
    assert (shown["name"], shown["group"], shown["creation_time"]) == (None, None, "2026-11-29T04:15:22Z")
    assert [list(i) for i in shown["inputs"] + shown["outputs"]] == [
        ["name", "description", "type", "value"], ["name", "type", "error_output"]]
    assert "ember_hash" not in software_views.metadata_item(config)
    hashed = software_views.metadata_item(ConfigRow(**{**config.__dict__, "hash": "abc"}))
    assert hashed["ember_hash"] == "abc"
    deployment = DeploymentRow(id=uuid.uuid4(), project="p", config_id=config.id, server_id="s",
                               input_values={}, output_values={}, action="", status="", status_reason="None",
                               stack_user_project_id="", created_at=AT, updated_at=None)
    view = software_views.deployment_view(deployment)
    assert (view["action"], view["status"], view["output_values"], "updated_time" in view) == (
        None, None, None, False)
