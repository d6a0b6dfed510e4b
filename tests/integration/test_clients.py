"""The real ``openstack stack ...`` commands against ``ember dev``, as a Heat operator runs them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.integration.clients import Osc, ember_dev
from tests.support import scratch, wait_until

pytestmark = pytest.mark.slow

TEMPLATE = """\
heat_template_version: 2016-10-14
description: talk to yourself
parameters:
  word: {type: string, default: hello}
  motd: {type: string, default: none}
resources:
  first:
    type: OS::Heat::TestResource
    properties: {value: {get_param: word}}
  second:
    type: OS::Heat::TestResource
    properties:
      value: {list_join: [' ', [{get_attr: [first, output]}, {get_file: greeting.txt}]]}
  spare: {type: My::Spare}
outputs:
  said: {value: {get_attr: [second, output]}, description: what was said}
"""
ENVIRONMENT = """\
parameters: {motd: welcome}
resource_registry:
  My::Spare: OS::Heat::None
"""


@pytest.fixture
def workdir() -> Iterator[Path]:
    with scratch("ember-clients-") as base:  # ember dev's embedded servers never run here, but its logs do
        (base / "talk.yaml").write_text(TEMPLATE)
        (base / "greeting.txt").write_text("world")
        (base / "env.yaml").write_text(ENVIRONMENT)
        (base / "broken.yaml").write_text("heat_template_version: 2016-10-14\nresources:\n"
                                          "  bad: {type: OS::Heat::TestResource, properties: {fail: true}}\n")
        yield base


@pytest.mark.slow_ci  # about 70 s of `openstack` processes; tests/cloud's stack runs the CLI in ./test.sh
def test_openstack_stack_commands_in_noauth_mode(ember_env: dict[str, str], workdir: Path) -> None:
    with ember_dev(ember_env, workdir) as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        _orchestration_commands(osc)
        _stack_commands(osc)


def _orchestration_commands(osc: Osc) -> None:
    versions = osc.json("orchestration", "template", "version", "list")
    assert {"Version": "heat_template_version.2016-10-14", "Type": "hot",
            "Aliases": ["heat_template_version.newton"]} in versions
    functions = osc.json("orchestration", "template", "function", "list",
                         "heat_template_version.2016-10-14")
    assert "get_attr" in {f["Functions"] for f in functions}
    types = osc.json("orchestration", "resource", "type", "list")
    assert {"Resource Type": "OS::Heat::TestResource"} in types
    shown_type = yaml.safe_load(osc.run("orchestration", "resource", "type", "show",
                                        "OS::Heat::TestResource").stdout)
    assert shown_type["resource_type"] == "OS::Heat::TestResource"
    validated = osc.json("orchestration", "template", "validate", "-t", "talk.yaml", "-e", "env.yaml")
    assert validated["Description"] == "talk to yourself" and "word" in validated["Parameters"]
    services = osc.json("orchestration", "service", "list")
    assert {s["Binary"] for s in services} >= {"ember-api", "ember-planner", "ember-worker"}


def _stack_commands(osc: Osc) -> None:
    created = osc.run("stack", "create", "-t", "talk.yaml", "-e", "env.yaml", "--parameter", "word=hi",
                      "--wait", "talk")
    assert "Stack CREATE completed successfully" in created.stdout
    assert "[talk.first]: CREATE_COMPLETE  state changed" in created.stdout

    listed = osc.json("stack", "list")
    assert [(s["Stack Name"], s["Stack Status"]) for s in listed] == [("talk", "CREATE_COMPLETE")]
    assert listed[0]["Updated Time"] is None
    shown = osc.json("stack", "show", "talk")
    assert shown["parameters"]["motd"] == "welcome" and shown["description"] == "talk to yourself"
    assert shown["outputs"] == [{"output_key": "said", "output_value": "hi world",
                                 "description": "what was said"}]
    assert osc.json("stack", "output", "show", "talk", "said")["output_value"] == "hi world"
    assert osc.json("stack", "output", "list", "talk") == [{"output_key": "said",
                                                             "description": "what was said"}]
    resources = {r["resource_name"]: r for r in osc.json("stack", "resource", "list", "talk")}
    assert {n: r["resource_type"] for n, r in resources.items()} == {
        "first": "OS::Heat::TestResource", "second": "OS::Heat::TestResource", "spare": "My::Spare"}
    first = osc.json("stack", "resource", "show", "talk", "first")
    assert first["required_by"] == ["second"] and first["attributes"] == {"output": "hi"}
    assert osc.json("stack", "resource", "metadata", "talk", "first") == {}
    events = osc.json("stack", "event", "list", "talk")
    assert events[0]["resource_status_reason"] == "Stack CREATE started"
    assert yaml.safe_load(osc.run("stack", "template", "show", "talk").stdout)["description"] == (
        "talk to yourself")
    env = yaml.safe_load(osc.run("stack", "environment", "show", "talk").stdout)
    assert env["parameters"] == {"motd": "welcome", "word": "hi"}

    signalled = osc.run("stack", "resource", "signal", "talk", "first", ok=False)
    assert signalled.returncode != 0 and "signal is not supported for resource" in signalled.stderr
    osc.run("stack", "resource", "mark", "unhealthy", "talk", "first", "broken on purpose")
    assert osc.json("stack", "resource", "show", "talk", "first")["resource_status"] == "CHECK_FAILED"
    assert osc.json("stack", "show", "talk")["stack_status"] == "CREATE_COMPLETE"  # as in Heat

    failed = osc.run("stack", "create", "-t", "broken.yaml", "--wait", "broken", ok=False)
    assert failed.returncode != 0 and "Stack broken CREATE_FAILED" in failed.stdout + failed.stderr
    failures = osc.run("stack", "failures", "list", "broken").stdout
    assert "broken.bad:" in failures and "ValueError: resources.bad: Test Resource failed bad" in failures

    dry = osc.run("stack", "update", "--existing", "--parameter", "word=bye", "--dry-run", "talk").stdout
    assert "updated" in dry or "replaced" in dry
    updated = osc.run("stack", "update", "--existing", "--parameter", "word=bye", "--wait", "talk")
    assert "Stack UPDATE completed successfully" in updated.stdout
    assert osc.json("stack", "output", "show", "talk", "said")["output_value"] == "bye world"

    for action, status in (("check", "CHECK_COMPLETE"), ("suspend", "SUSPEND_COMPLETE"),
                           ("resume", "RESUME_COMPLETE")):
        osc.run("stack", action, "--wait", "talk")
        assert osc.json("stack", "show", "talk")["stack_status"] == status

    osc.run("stack", "update", "-t", "talk.yaml", "-e", "env.yaml", "--parameter", "word=slow",
            "talk")
    cancelled = osc.run("stack", "cancel", "--no-rollback", "--wait", "talk", ok=False)
    assert "Traceback" not in cancelled.stderr

    missing = osc.run("stack", "show", "nosuch", ok=False)
    assert missing.returncode != 0 and "Stack not found: nosuch" in missing.stderr + missing.stdout

    osc.run("stack", "delete", "--yes", "--wait", "talk", "broken")
    assert osc.json("stack", "list") == []
    deleted = osc.json("stack", "list", "--deleted")
    assert {("broken", "DELETE_COMPLETE"), ("talk", "DELETE_COMPLETE")} <= {
        (s["Stack Name"], s["Stack Status"]) for s in deleted}


@pytest.mark.slow_ci  # about 90 s of `openstack` processes; noauth mode runs in ./test.sh
def test_openstack_commands_in_keystone_mode(ember_env: dict[str, str], workdir: Path) -> None:
    users = workdir / "users.yaml"
    users.write_text("projects: [{name: alpha}, {name: beta}]\nusers:\n"
                     "  - {name: alice, password: wonderland, roles: {alpha: [member]}}\n"
                     "  - {name: bob, password: builder, roles: {beta: [member]}}\n"
                     "  - {name: root, password: toor, roles: {beta: [admin]}}\n")
    env = {**ember_env, "EMBER_AUTH": "keystone", "EMBER_AUTH_CONFIG": str(users)}
    with ember_dev(env, workdir) as url:
        def as_user(name: str, password: str, project: str) -> Osc:
            return Osc({"OS_AUTH_URL": f"{url}/identity/v3", "OS_USERNAME": name, "OS_PASSWORD": password,
                        "OS_PROJECT_NAME": project, "OS_USER_DOMAIN_NAME": "Default",
                        "OS_PROJECT_DOMAIN_NAME": "Default", "OS_IDENTITY_API_VERSION": "3"}, workdir)

        alice, bob = as_user("alice", "wonderland", "alpha"), as_user("bob", "builder", "beta")
        _orchestration_commands(as_user("root", "toor", "beta"))  # service list is for admins
        refused = alice.run("orchestration", "service", "list", ok=False)
        assert refused.returncode != 0 and "You are not authorized" in refused.stderr
        created = alice.run("stack", "create", "-t", "talk.yaml", "-e", "env.yaml", "--wait", "peek")
        assert "Stack CREATE completed successfully" in created.stdout
        assert bob.json("stack", "list") == []
        hidden = bob.run("stack", "show", "peek", ok=False)
        assert hidden.returncode != 0 and "Stack not found: peek" in hidden.stdout + hidden.stderr
        stranger = as_user("alice", "not-her-password", "alpha").run("stack", "list", ok=False)
        assert stranger.returncode != 0
        alice.run("stack", "delete", "--yes", "--wait", "peek")
        _stack_commands(alice)


NESTED = """\
heat_template_version: 2016-10-14
resources:
  group:
    type: OS::Heat::ResourceGroup
    properties:
      count: 2
      resource_def: {type: OS::Heat::TestResource, properties: {value: "member-%index%"}}
  nest:
    type: OS::Heat::Stack
    properties:
      template: {get_file: inner.yaml}
outputs:
  values: {value: {get_attr: [group, attributes, output]}}
"""
INNER = """\
heat_template_version: 2016-10-14
parameters:
  fail: {type: boolean, default: false}
resources:
  deep: {type: OS::Heat::TestResource, properties: {fail: {get_param: fail}}}
"""


@pytest.mark.slow_ci  # about 35 s of `openstack` processes
def test_openstack_nested_snapshot_and_adopt_commands(ember_env: dict[str, str], workdir: Path) -> None:
    (workdir / "nested.yaml").write_text(NESTED)
    (workdir / "inner.yaml").write_text(INNER)
    (workdir / "failing.yaml").write_text("heat_template_version: 2016-10-14\nresources:\n  nest:\n"
                                          "    type: OS::Heat::Stack\n    properties:\n"
                                          "      template: {get_file: inner.yaml}\n"
                                          "      parameters: {fail: true}\n")
    env = {**ember_env, "EMBER_ENABLE_STACK_ABANDON": "true", "EMBER_ENABLE_STACK_ADOPT": "true"}
    with ember_dev(env, workdir) as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        osc.run("stack", "create", "-t", "nested.yaml", "--wait", "deep")
        listed = osc.json("stack", "resource", "list", "-n", "2", "deep")
        names = {(r["resource_name"], r.get("stack_name", "deep")) for r in listed}
        assert {n for n, _ in names} >= {"group", "nest", "0", "1", "deep"}
        assert len(osc.json("stack", "list", "--nested")) == 3

        snapshot = osc.json("stack", "snapshot", "create", "--name", "first", "deep")
        assert snapshot["name"] == "first" and snapshot["status"] == "COMPLETE"
        assert [s["name"] for s in osc.json("stack", "snapshot", "list", "deep")] == ["first"]
        shown = yaml.safe_load(osc.run("stack", "snapshot", "show", "deep", snapshot["ID"]).stdout)
        assert shown["snapshot"]["status"] == "COMPLETE"
        osc.run("stack", "snapshot", "restore", "deep", snapshot["ID"])
        wait_until(lambda: osc.json("stack", "show", "deep")["stack_status"] == "RESTORE_COMPLETE" or None,
                   timeout=60, interval=0.5, what="the restore")
        osc.run("stack", "snapshot", "delete", "deep", snapshot["ID"])
        assert osc.json("stack", "snapshot", "list", "deep") == []

        osc.run("stack", "abandon", "--output-file", "abandoned.json", "deep")
        wait_until(lambda: osc.json("stack", "list") == [] or None, timeout=60, interval=0.5,
                   what="the abandon")
        adopted = osc.run("stack", "adopt", "--adopt-file", "abandoned.json", "--wait", "again")
        assert "ADOPT_COMPLETE" in adopted.stdout
        assert osc.json("stack", "output", "show", "again", "values")["output_value"] == {
            "0": "member-0", "1": "member-1"}

        failed = osc.run("stack", "create", "-t", "failing.yaml", "--wait", "sad", ok=False)
        assert failed.returncode != 0
        failures = osc.run("stack", "failures", "list", "sad").stdout
        assert "sad.nest.deep" in failures and "Test Resource failed deep" in failures


SCALED = """\
heat_template_version: 2016-10-14
resources:
  group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 4
      desired_capacity: 1
      resource: {type: OS::Heat::RandomString, properties: {length: 8}}
  grow:
    type: OS::Heat::ScalingPolicy
    properties:
      auto_scaling_group_id: {get_resource: group}
      adjustment_type: change_in_capacity
      scaling_adjustment: 2
      cooldown: 0
  shrink:
    type: OS::Heat::ScalingPolicy
    properties:
      auto_scaling_group_id: {get_resource: group}
      adjustment_type: change_in_capacity
      scaling_adjustment: -1
      cooldown: 0
  deaf: {type: OS::Heat::None}
outputs:
  size: {value: {get_attr: [group, current_size]}}
"""


@pytest.mark.slow_ci  # about 35 s of `openstack` processes
def test_openstack_stack_resource_signal_scales_a_group(ember_env: dict[str, str], workdir: Path) -> None:
    (workdir / "scaled.yaml").write_text(SCALED)
    with ember_dev(ember_env, workdir) as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        created = osc.run("stack", "create", "-t", "scaled.yaml", "--wait", "scaled")
        assert "Stack CREATE completed successfully" in created.stdout
        nested = osc.json("stack", "resource", "show", "scaled", "group")["physical_resource_id"]

        def members() -> list[str]:
            return sorted(r["resource_name"] for r in osc.json("stack", "resource", "list", nested))

        def settled(size: int) -> list[str] | None:
            """The group's members once the output, the nested stack and its resources all say ``size``."""
            if osc.json("stack", "output", "show", "scaled", "size")["output_value"] != size:
                return None
            if not osc.json("stack", "show", nested)["stack_status"].endswith("_COMPLETE"):
                return None
            found = members()
            return found if len(found) == size else None

        def signal_and_wait(policy: str, size: int) -> list[str]:
            osc.run("stack", "resource", "signal", "scaled", policy)
            found = wait_until(lambda: settled(size), timeout=60, interval=0.3,
                               what=f"the group to have {size} members after signalling {policy}")
            # As in Heat, a policy's signal updates the group's nested stack, not the stack itself.
            assert osc.json("stack", "show", "scaled")["stack_status"] == "CREATE_COMPLETE"
            assert osc.json("stack", "show", nested)["stack_status"] == "UPDATE_COMPLETE"
            return found

        first = settled(1)
        assert first is not None and osc.json("stack", "show", nested)["stack_status"] == "CREATE_COMPLETE"
        grown = signal_and_wait("grow", 3)
        assert set(first) < set(grown)
        shrunk = signal_and_wait("shrink", 2)
        assert set(shrunk) == set(grown) - set(first)  # the oldest member goes first
        capped = signal_and_wait("grow", 4)  # 2 + 2: at max_size
        assert set(shrunk) < set(capped)

        before = osc.json("stack", "show", nested)["updated_time"]
        osc.run("stack", "resource", "signal", "scaled", "grow")  # past max_size: nothing to do
        assert osc.json("stack", "output", "show", "scaled", "size")["output_value"] == 4
        assert osc.json("stack", "show", nested)["updated_time"] == before
        assert osc.json("stack", "show", nested)["stack_status"] == "UPDATE_COMPLETE"
        assert members() == capped
        assert osc.json("stack", "show", "scaled")["stack_status"] == "CREATE_COMPLETE"

        refused = osc.run("stack", "resource", "signal", "scaled", "deaf", ok=False)
        assert refused.returncode == 1
        assert "ERROR: signal is not supported for resource." in refused.stderr  # ResourceActionNotSupported
        assert osc.json("stack", "resource", "show", "scaled", "deaf")["resource_status"] == "CREATE_COMPLETE"
        events = osc.json("stack", "event", "list", "scaled")
        signals = [(e["resource_name"], e["resource_status_reason"]) for e in events
                   if e["resource_status"] == "SIGNAL_COMPLETE"]
        assert [reason for name, reason in signals if name == "group"] == [  # none for the capped signal
            "Scaling from 1 to 3", "Scaling from 3 to 2", "Scaling from 2 to 4"]
        assert [name for name, _ in signals if name != "group"] == ["grow", "shrink", "grow", "grow"]
