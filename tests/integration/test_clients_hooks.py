"""Heat's hook commands of the real ``openstack`` client against ``ember dev``, unchanged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clients import Osc, ember_dev
from tests.support import scratch, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = """\
heat_template_version: 2016-10-14
resources:
  first: {type: OS::Heat::TestResource, properties: {value: one}}
  second:
    type: OS::Heat::TestResource
    properties: {value: {get_attr: [first, output]}}
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def: {type: OS::Heat::TestResource, properties: {value: member}}
"""


@pytest.fixture
def workdir() -> Iterator[Path]:
    with scratch("ember-hooks-") as base:
        (base / "hooked.yaml").write_text(TEMPLATE)
        yield base


def _polled(osc: Osc, stack: str, expected: set[str]) -> list[dict[str, str]]:
    def probe() -> list[dict[str, str]] | None:
        rows: list[dict[str, str]] = osc.json("stack", "hook", "poll", "--nested-depth", "2", stack)
        return rows if {r["Resource Name"] for r in rows} == expected else None
    return wait_until(probe, timeout=60, interval=0.5, what=f"hook poll to show {sorted(expected)}")


@pytest.mark.slow_ci  # 16 s of CLI runs; test.sh keeps the hooks through the API (test_hooks, test_debugger)
def test_pre_create_hooks_poll_and_clear_with_the_openstack_client(ember_env: dict[str, str],
                                                                  workdir: Path) -> None:
    with ember_dev(ember_env, workdir) as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        # A nested path reaches member "1" of the group's nested stack.
        osc.run("stack", "create", "-t", "hooked.yaml", "--pre-create", "first", "--pre-create", "group/1",
                "hooked")
        rows = _polled(osc, "hooked", {"first", "1"})
        by_name = {r["Resource Name"]: r for r in rows}
        assert by_name["first"]["Resource Status Reason"] == "CREATE paused until Hook pre-create is cleared"
        shown = osc.json("stack", "show", "hooked")
        assert shown["stack_status"] == "CREATE_IN_PROGRESS"
        assert shown["stack_status_reason"].startswith("Paused at breakpoints: ")

        refused = osc.run("stack", "hook", "clear", "--pre-update", "hooked", "first", ok=False)
        said = refused.stderr + refused.stdout
        assert 'The "pre-update" hook is not defined on TestResource "first"' in said

        osc.run("stack", "hook", "clear", "--pre-create", "hooked", "first")
        _polled(osc, "hooked", {"1"})
        # The nested member, by its path through the group (heatclient resolves the wildcard
        # against the resource list and signals what matches).
        osc.run("stack", "hook", "clear", "--pre-create", "hooked", "gr*/1")
        wait_until(lambda: osc.json("stack", "show", "hooked")["stack_status"] == "CREATE_COMPLETE" or None,
                   timeout=60, interval=0.5, what="the create to finish")
        after = osc.run("stack", "hook", "poll", "hooked", ok=False)  # heatclient polls running stacks only
        assert "Stack status CREATE_COMPLETE not IN_PROGRESS" in after.stderr + after.stdout

        # An update pauses every existing resource it visits at pre-update, changed or not (Heat).
        osc.run("stack", "update", "-t", "hooked.yaml", "--pre-update", "second", "hooked")
        rows = _polled(osc, "hooked", {"second"})
        assert rows[0]["Resource Status Reason"] == "UPDATE paused until Hook pre-update is cleared"
        osc.run("stack", "hook", "clear", "--pre-update", "hooked", "second")
        wait_until(lambda: osc.json("stack", "show", "hooked")["stack_status"] == "UPDATE_COMPLETE" or None,
                   timeout=60, interval=0.5, what="the update to finish")
