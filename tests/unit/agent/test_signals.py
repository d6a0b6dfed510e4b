"""Where a result is signalled and when a failed signal is tried again (libs/agent/signals)."""

from __future__ import annotations

from typing import Any

import pytest

from libs.agent.configs import DerivedConfig, parse
from libs.agent.signals import (
    Answer,
    Backoff,
    Nowhere,
    ToHeat,
    ToNats,
    ToUrl,
    answer,
    orchestration_endpoint,
    target,
)
from tests.agent_items import item, signalled_to

HEAT = {"deploy_signal_transport": "HEAT_SIGNAL", "deploy_auth_url": "http://ks:5000/v3",
        "deploy_user_id": "u-1", "deploy_username": "dep", "deploy_password": "pw",
        "deploy_project_id": "p-1",
        "deploy_stack_id": "web/4f1e", "deploy_resource_name": "deploy me"}


def _target(derived: dict[str, Any]) -> Any:
    config = parse(item("one", derived=derived))
    assert isinstance(config, DerivedConfig)
    return target(config)


@pytest.mark.parametrize(("derived", "expected"), [
    (signalled_to("http://api/signal/1?sig=abc"), ToUrl("http://api/signal/1?sig=abc", "POST")),
    (signalled_to("https://swift/tempurl", "PUT"), ToUrl("https://swift/tempurl", "PUT")),
    (signalled_to("http://api/s", "DELETE"), ToUrl("http://api/s", "POST")),
    ({}, Nowhere("signal transport NO_SIGNAL")),
    (signalled_to("file:///etc/passwd"),
     Nowhere("deploy_signal_id 'file:///etc/passwd' is not an http(s) URL", fault=True)),
    ({"deploy_queue_id": "q", "deploy_auth_url": "http://ks"},
     Nowhere("ZAQAR_SIGNAL is not supported (no Zaqar in Ember)", fault=True)),
    ({**HEAT, "deploy_password": ""}, Nowhere("HEAT_SIGNAL without deploy_password", fault=True)),
    (HEAT, ToHeat("http://ks:5000/v3", "u-1", "dep", "pw", "p-1", None, "web/4f1e", "deploy me")),
    ({"deploy_signal_transport": "NATS_SIGNAL", "deploy_signal_subject": "ember.signal.p.s.r"},
     ToNats("ember.signal.p.s.r")),
    ({"deploy_signal_subject": "ember.signal.>"},
     Nowhere("deploy_signal_subject 'ember.signal.>' is not a NATS subject", fault=True)),
    ({"deploy_signal_subject": "ember..r"},
     Nowhere("deploy_signal_subject 'ember..r' is not a NATS subject", fault=True)),
])
def test_the_signal_target(derived: dict[str, Any], expected: Any) -> None:
    assert _target(derived) == expected


def test_heat_signal_routes() -> None:
    goal = _target(HEAT)
    assert isinstance(goal, ToHeat)
    assert goal.tokens_url == "http://ks:5000/v3/auth/tokens"
    assert _target({**HEAT, "deploy_auth_url": "http://h/identity"}).tokens_url == "http://h/identity/v3/auth/tokens"
    assert goal.signal_url("http://h:8004/v1/p-1/") == (
        "http://h:8004/v1/p-1/stacks/web/4f1e/resources/deploy%20me/signal")
    assert goal.auth_body() == {"auth": {
        "identity": {"methods": ["password"], "password": {"user": {"id": "u-1", "password": "pw"}}},
        "scope": {"project": {"id": "p-1"}}}}
    by_name = _target({**HEAT, "deploy_user_id": None})
    assert by_name.auth_body()["auth"]["identity"]["password"]["user"] == {
        "name": "dep", "domain": {"id": "default"}, "password": "pw"}


def test_the_orchestration_endpoint_of_a_token_s_catalog() -> None:
    def endpoint(interface: str, region: str, url: str) -> dict[str, str]:
        return {"interface": interface, "region": region, "region_id": region, "url": url}

    body = {"token": {"catalog": [
        {"type": "identity", "endpoints": [endpoint("public", "One", "http://ks")]},
        {"type": "orchestration", "endpoints": [endpoint("internal", "One", "http://internal"),
                                                endpoint("public", "One", "http://one/v1/p"),
                                                endpoint("public", "Two", "http://two/v1/p")]}]}}
    assert orchestration_endpoint(body, None) == "http://one/v1/p"
    assert orchestration_endpoint(body, "Two") == "http://two/v1/p"
    assert orchestration_endpoint(body, "Three") is None
    assert orchestration_endpoint({"token": {}}, None) is None


@pytest.mark.parametrize(("status", "expected"), [
    (200, Answer.DELIVERED), (204, Answer.DELIVERED), (500, Answer.RETRY), (503, Answer.RETRY),
    (429, Answer.RETRY), (408, Answer.RETRY), (400, Answer.REFUSED), (401, Answer.REFUSED),
    (404, Answer.REFUSED),
])
def test_what_an_answer_means(status: int, expected: Answer) -> None:
    assert answer(status) is expected


def test_backoff_doubles_to_its_cap_and_ends() -> None:
    backoff = Backoff(attempts=6, first_wait=0.5, max_wait=4.0)
    assert [backoff.wait_after(n) for n in range(1, 7)] == [0.5, 1.0, 2.0, 4.0, 4.0, None]
    assert Backoff(1, 1.0, 30.0).wait_after(1) is None
