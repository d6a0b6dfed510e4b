"""What a stack user's token reaches (services/api/stack_user_access): its own resource, nothing else."""

from __future__ import annotations

import pytest

from services.api.context import StackUserScope
from services.api.stack_user_access import METADATA, SERVER_DEPLOYMENTS, SIGNAL, allows, signs

SCOPE = StackUserScope(stack_id="5d2e", resource_name="server", physical_id="srv-1")
OWN = {"project_id": "p", "stack_name": "st", "stack_id": "5d2e", "resource_name": "server"}


@pytest.mark.parametrize(("method", "route", "match", "allowed"), [
    ("GET", METADATA, OWN, True),
    ("POST", SIGNAL, OWN, True),
    ("GET", SERVER_DEPLOYMENTS, {"project_id": "p", "server_id": "srv-1"}, True),
    # Heat's stacks:lookup: a stack by name redirects to a route checked in turn.
    ("GET", "/v1/{project_id}/stacks/{stack_name}", {"stack_name": "st"}, True),
    ("POST", "/v1/{project_id}/stacks/{stack_name}/{tail}", {"stack_name": "st"}, True),
    # Another resource, another stack of the same name, another server.
    ("GET", METADATA, {**OWN, "resource_name": "deployment"}, False),
    ("POST", SIGNAL, {**OWN, "stack_id": "9f00"}, False),
    ("GET", SERVER_DEPLOYMENTS, {"project_id": "p", "server_id": "srv-2"}, False),
    # Any other route, or another method on its own ones.
    ("GET", "/v1/{project_id}/stacks", {"project_id": "p"}, False),
    ("GET", "/v1/{project_id}/stacks/{stack_name}/{stack_id}/resources/{resource_name}", OWN, False),
    ("POST", METADATA, OWN, False),
    ("GET", SIGNAL, OWN, False),
    ("GET", None, {}, False),
])
def test_a_stack_user_reaches_its_own_resource_alone(method: str, route: str | None, match: dict[str, str],
                                                     allowed: bool) -> None:
    assert allows(SCOPE, method, route, match) is allowed


def test_a_resource_with_no_server_reads_no_server_deployments() -> None:
    deployment = StackUserScope(stack_id="5d2e", resource_name="deployment", physical_id=None)
    assert not allows(deployment, "GET", SERVER_DEPLOYMENTS, {"server_id": "None"})


def test_a_signed_url_signals_and_does_nothing_else() -> None:
    assert signs("POST", SIGNAL)
    assert not signs("GET", METADATA) and not signs("GET", SIGNAL) and not signs("POST", None)
