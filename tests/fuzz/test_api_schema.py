"""Schemathesis over ``/openapi.json``: every route, generated paths, queries and bodies.

Each route is called with what the schema allows and more (random strings, objects of any shape),
with the path's project, stack and resource set to a real project, stack and resource most of the
time so that the requests reach the handlers' deep ends instead of stopping at a 404. Every answer
must be below 500, in Heat's fault shape when it is an error, and come within 2 s
(:class:`tests.fuzz.conftest.Caller`). EMBER_FUZZ_EXAMPLES sets the examples per route,
EMBER_FUZZ_ROUTES (a regular expression) limits the paths.
"""

from __future__ import annotations

import dataclasses
import os
import time
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.generation.case import Case

from services.api.openapi import document
from tests.fuzz.conftest import PROJECT, Caller, budget
from tests.support import wait_until

pytestmark = pytest.mark.slow_ci

# EMBER_FUZZ_ROUTES, a regular expression, fuzzes only the paths it matches.
ROUTES = os.environ.get("EMBER_FUZZ_ROUTES", "")
schema = schemathesis.openapi.from_dict(document()).include(path_regex=ROUTES)

TEMPLATE = {"heat_template_version": "2018-08-31",
            "parameters": {"p": {"type": "string", "default": "x"}},
            "resources": {"r": {"type": "OS::Heat::TestResource",
                                "properties": {"value": {"get_param": "p"}}}},
            "outputs": {"o": {"value": {"get_attr": ["r", "output"]}}}}


@dataclasses.dataclass
class Target:
    """The real stack that paths point at; made again when a generated request deletes it."""

    caller: Caller
    name: str = "fuzzed"
    id: str = ""

    def ensure(self) -> None:
        shown = f"{self.caller.base}/v1/{PROJECT}/stacks/{self.name}/{self.id}"
        if self.id and self.caller.session.get(shown, timeout=30).status_code == 200:
            return
        created = self.caller.request("POST", f"/v1/{PROJECT}/stacks",
                                      json={"stack_name": self.name, "template": TEMPLATE})
        assert created.status_code == 201, created.text
        self.id = created.json()["stack"]["id"]

        def settled() -> bool:
            body = self.caller.session.get(f"{self.caller.base}/v1/{PROJECT}/stacks/{self.name}/{self.id}",
                                           timeout=30).json()
            return not body["stack"]["stack_status"].endswith("IN_PROGRESS")
        wait_until(settled, timeout=60, interval=0.2, what="the fuzzed stack to settle")


@pytest.fixture(scope="module")
def target(fuzz_api: Caller) -> Target:
    made = Target(fuzz_api)
    made.ensure()
    return made


def _aim(case: Case[Any], target: Target) -> None:
    """Point most requests at what exists; the generated values still go everywhere else."""
    real = {"project_id": PROJECT, "stack_name": target.name, "stack_id": target.id, "resource_name": "r",
            "output_key": "o"}
    for key, value in real.items():
        if key in (case.path_parameters or {}) and hash(case.path_parameters[key]) % 8:
            case.path_parameters[key] = value


@schema.parametrize()
@settings(max_examples=budget("EMBER_FUZZ_EXAMPLES", 15), deadline=None, derandomize=False,
          suppress_health_check=list(HealthCheck))
def test_no_route_answers_5xx_or_slowly(case: Case[Any], target: Target) -> None:
    target.ensure()
    _aim(case, target)
    kwargs: dict[str, Any] = case.as_transport_kwargs(base_url=target.caller.base)
    started = time.monotonic()
    # An event stream answers its head and then stays open: its head is the answer timed here.
    with target.caller.session.request(**kwargs, timeout=30, stream=True) as response:
        elapsed = time.monotonic() - started
        if not response.headers.get("Content-Type", "").startswith("text/event-stream"):
            response.content  # noqa: B018 - read the whole body before judging it
            elapsed = time.monotonic() - started
        target.caller.check(case.method, case.formatted_path, response, elapsed)
