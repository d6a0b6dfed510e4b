"""Deployment groups: the members a servers map makes, the batches they are made and updated in,
and the maps their attributes are."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from libs.engine.status import Action
from libs.resources.deployment_group import (
    SoftwareDeploymentGroup,
    StructuredDeploymentGroup,
    attribute_map,
    batch_names,
    deployment_members,
)
from libs.resources.registry import default_registry
from libs.resources.steps import ChildStack, Done, Nest, StepContext, Wait
from libs.template.attribute_store import AttributeFailed
from tests.unit.resources.resource_support import make_ctx

SD, STRUCTURED = "OS::Heat::SoftwareDeployment", "OS::Heat::StructuredDeployment"


@pytest.mark.parametrize(("member_type", "properties", "expected"), [
    # one member per server, named by its key, in the map's order, with the server's id
    (SD, {"servers": {"web": "id-w", "db": "id-d"}, "config": "cfg", "actions": ["CREATE", "UPDATE"],
          "input_values": {"port": 80}, "name": "deploy", "signal_transport": "NO_SIGNAL"},
     {"web": {"type": SD, "properties": {"config": "cfg", "actions": ["CREATE", "UPDATE"],
                                         "input_values": {"port": 80}, "name": "deploy",
                                         "signal_transport": "NO_SIGNAL", "server": "id-w"}},
      "db": {"type": SD, "properties": {"config": "cfg", "actions": ["CREATE", "UPDATE"],
                                        "input_values": {"port": 80}, "name": "deploy",
                                        "signal_transport": "NO_SIGNAL", "server": "id-d"}}}),
    # properties without a value are left to the member's defaults
    (SD, {"servers": {"a": "id-a"}, "config": None, "input_values": None, "actions": ["DELETE"], "name": None,
          "signal_transport": "HEAT_SIGNAL"},
     {"a": {"type": SD, "properties": {"actions": ["DELETE"], "signal_transport": "HEAT_SIGNAL",
                                       "server": "id-a"}}}),
    # the structured group's own properties reach its members too
    (STRUCTURED, {"servers": {"a": "id-a"}, "config": "c", "input_key": "get_input",
                  "input_values_validate": "STRICT"},
     {"a": {"type": STRUCTURED, "properties": {"config": "c", "input_key": "get_input",
                                               "input_values_validate": "STRICT", "server": "id-a"}}}),
    # a server not known yet (a resource not made) is the member's to refuse
    (SD, {"servers": {"a": None}}, {"a": {"type": SD, "properties": {"server": None}}}),
    (SD, {"servers": {}, "config": "c"}, {}),
    (SD, {"servers": {1: "id-1"}}, {"1": {"type": SD, "properties": {"server": "id-1"}}}),
])
def test_the_members_are_the_servers_map(member_type: str, properties: dict[str, Any],
                                         expected: dict[str, Any]) -> None:
    members = deployment_members(member_type, properties)
    assert members == expected
    assert list(members) == list(expected)


@pytest.mark.parametrize(("group", "member_type"), [
    (SoftwareDeploymentGroup(), SD), (StructuredDeploymentGroup(), STRUCTURED)])
def test_each_group_makes_members_of_its_deployment_type(group: SoftwareDeploymentGroup,
                                                         member_type: str) -> None:
    request = group.child_request(make_ctx({"servers": {"a": "id-a", "b": "id-b"}, "config": "c"}))
    assert {n: r["type"] for n, r in request.template["resources"].items()} == {"a": member_type,
                                                                                 "b": member_type}
    # The nested template has no outputs: the group reads its members' rows.
    assert "outputs" not in request.template


@pytest.mark.parametrize(("servers", "size", "one", "has_members"), [
    ({"a": "1", "b": "2", "c": "3"}, 3, {"a": "1"}, True),
    ({}, 0, {}, False),  # Heat validates no member of an empty group
    ("not a map", None, "not a map", True),  # its own validation reports it
])
def test_sizes_and_the_one_member_heats_validation_builds(servers: Any, size: int | None, one: Any,
                                                          has_members: bool) -> None:
    group = SoftwareDeploymentGroup()
    assert group.size({"servers": servers}) == size
    assert group.one_member({"servers": servers, "config": "c"}) == {"servers": one, "config": "c"}
    assert group.has_members({"servers": servers}) is has_members


def test_the_types_are_registered_with_heats_names_and_the_old_names_hidden() -> None:
    registry = default_registry()
    names = [n for n in registry.types() if n.endswith(("DeploymentGroup", "Deployments"))]
    shown = {n: (registry.get(n).heat_class_name(), registry.get(n).support_status.status) for n in names}
    assert shown == {
        "OS::Heat::SoftwareDeploymentGroup": ("SoftwareDeploymentGroup", "SUPPORTED"),
        "OS::Heat::StructuredDeploymentGroup": ("StructuredDeploymentGroup", "SUPPORTED"),
        "OS::Heat::SoftwareDeployments": ("SoftwareDeployments", "HIDDEN"),
        "OS::Heat::StructuredDeployments": ("StructuredDeployments", "HIDDEN")}
    structured = registry.get("OS::Heat::StructuredDeploymentGroup").properties_schema
    assert list(structured) == ["servers", "config", "input_values", "actions", "name", "signal_transport",
                                "input_key", "input_values_validate"]
    # signal_transport, input_key and input_values_validate change only by replacement, as Heat's
    assert [k for k, p in structured.items() if not p.update_allowed] == [
        "signal_transport", "input_key", "input_values_validate"]


# ---- attributes ----------------------------------------------------------------------------------

MEMBERS = {"web": {"deploy_stdout": "w-out", "deploy_stderr": "", "deploy_status_code": 0,
                   "result": {"url": "http://w"}},
           "db": {"deploy_stdout": "d-out", "deploy_stderr": "oops", "deploy_status_code": 1,
                  "result": None}}


@pytest.mark.parametrize(("name", "path", "expected"), [
    ("deploy_stdouts", (), {"web": "w-out", "db": "d-out"}),
    ("deploy_stderrs", (), {"web": "", "db": "oops"}),
    ("deploy_status_codes", (), {"web": 0, "db": 1}),
    ("deploy_stdouts", ("db",), "d-out"),  # a path selects in the map, not in each member's value
    ("result", (), {"web": {"url": "http://w"}, "db": None}),  # a config's declared output
    ("result", ("web", "url"), "http://w"),
    ("deploy_stdout", (), {"web": "w-out", "db": "d-out"}),  # a member attribute by its own name
    ("deploy_stdouts", ("nobody",), None),
])
def test_a_group_attribute_is_a_map_of_the_members_attribute(name: str, path: tuple[Any, ...],
                                                             expected: Any) -> None:
    assert attribute_map(MEMBERS, name, path) == expected


def test_an_attribute_no_member_has_fails_as_the_first_members_read_of_it() -> None:
    with pytest.raises(AttributeFailed, match=r"^The Referenced Attribute \(web nothing\) is incorrect\.$"):
        attribute_map(MEMBERS, "nothing", ())
    assert attribute_map({}, "nothing", ()) == {}


# ---- batches -------------------------------------------------------------------------------------

def _servers(count: int) -> dict[str, str]:
    return {f"s{i:02}": f"server-{i:02}" for i in range(count)}


def _props(servers: dict[str, str], value: str) -> dict[str, Any]:
    return {"servers": servers, "config": "cfg", "input_values": {"v": value},
            "actions": ["CREATE", "UPDATE"], "name": None, "signal_transport": "NO_SIGNAL"}


def _child(template: dict[str, Any], operation: str) -> ChildStack:
    names = list(template["resources"])
    return ChildStack(id="c", name="c", action="CREATE" if operation == "create" else "UPDATE",
                      status="COMPLETE", status_reason="", every=True, size=len(names),
                      resources={n: (f"id-{n}", {}) for n in names})


def _run(action: Action, ctx: StepContext) -> tuple[list[dict[str, str]], list[str | None]]:
    """Each nested stack the group asks for (member -> its input value), and what comes between
    two of them (the named step, a pause), the nested stack completing every time."""
    group = SoftwareDeploymentGroup()
    stacks: list[dict[str, str]] = []
    steps: list[str | None] = []
    result = group.start(action, ctx)
    while not isinstance(result, Done):
        assert isinstance(result, Nest | Wait), result
        data = {k: v for k, v in {**ctx.data, **result.data}.items() if v is not None}
        if isinstance(result, Wait):
            steps.append(result.step or f"pause {result.delay:g}")
            ctx = dataclasses.replace(ctx, data=data, now=ctx.now + result.delay)
        else:
            resources = result.template["resources"]
            stacks.append({n: r["properties"]["input_values"]["v"] for n, r in resources.items()})
            ctx = dataclasses.replace(ctx, data=data, child=_child(result.template, result.operation))
        result = group.check(action, ctx)
        assert len(stacks) < 100, "the group never finished"
    return stacks, steps


@pytest.mark.parametrize(("count", "policy", "sizes"), [
    (30, {"rolling_update": {"max_batch_size": 10}}, [10, 20, 30]),  # Ember's: rolling_update batches it
    (30, {}, [30]),
    (5, {"batch_create": {"max_batch_size": 2}}, [2, 4, 5]),  # Heat's own
    (3, {"batch_create": {}, "rolling_update": {"max_batch_size": 3}}, [1, 2, 3]),  # batch_create first
    (3, {"rolling_update": {}}, [1, 2, 3]),  # max_batch_size defaults to 1
    (0, {"rolling_update": {"max_batch_size": 10}}, [0]),
])
def test_a_create_deploys_in_batches(count: int, policy: dict[str, Any], sizes: list[int]) -> None:
    ctx = dataclasses.replace(make_ctx(_props(_servers(count), "a"), resource_name="group"),
                              update_policy=policy)
    stacks, steps = _run(Action.CREATE, ctx)
    assert [len(s) for s in stacks] == sizes
    # each batch keeps the members made before it and adds the next servers in the map's order
    assert [list(s) for s in stacks] == [list(_servers(count))[:size] for size in sizes]
    assert steps == [f"batch@{n}" for n in range(1, len(sizes))]


def test_a_batched_create_pauses_after_the_named_step_between_batches() -> None:
    ctx = dataclasses.replace(make_ctx(_props(_servers(30), "a"), resource_name="group"),
                              update_policy={"rolling_update": {"max_batch_size": 10, "pause_time": 5}})
    assert _run(Action.CREATE, ctx)[1] == ["batch@1", "pause 5", "batch@2", "pause 5"]


def _new(stack: dict[str, str]) -> int:
    return sum(1 for v in stack.values() if v == "b")


def test_a_rolling_update_of_input_values_updates_thirty_servers_ten_at_a_time() -> None:
    servers = _servers(30)
    old = {n: {"type": SD, "properties": {"input_values": {"v": "a"}}} for n in servers}
    ctx = dataclasses.replace(
        make_ctx(_props(servers, "b"), old_properties=_props(servers, "a"), resource_name="group",
                 physical_id="c"),
        child=_child({"resources": old}, "create"), update_policy={"rolling_update": {"max_batch_size": 10}})
    stacks, steps = _run(Action.UPDATE, ctx)
    assert [(len(s), _new(s)) for s in stacks] == [(30, 10), (30, 20), (30, 30)]
    assert [n for n, v in stacks[0].items() if v == "b"] == list(servers)[20:]  # the last ones first
    assert steps == ["batch@1", "batch@2"]


@pytest.mark.parametrize(("old", "new", "batch", "expected"), [
    # a server replaced by another: the new one counts against the first batch; then the
    # members take the new definition from the last in the map (Heat's replace_priority)
    ("abc", "acd", 1, [{"a": "a", "c": "a", "d": "b"}, {"a": "a", "c": "b", "d": "b"},
                       {"a": "b", "c": "b", "d": "b"}]),
    # growing: the members there are stay while the new ones come, whatever their place in the map
    ("cd", "abcd", 1, [{"a": "b", "c": "a", "d": "a"}, {"a": "b", "b": "b", "c": "a", "d": "a"},
                       {"a": "b", "b": "b", "c": "a", "d": "b"}, {"a": "b", "b": "b", "c": "b", "d": "b"}]),
    ("ab", "abcd", 2, [{"a": "a", "b": "a", "c": "b", "d": "b"}, {"a": "b", "b": "b", "c": "b", "d": "b"}]),
    # shrinking: the servers gone leave with the first batch
    ("abc", "a", 1, [{"a": "b"}]),
])
def test_a_rolling_update_follows_the_servers_map(old: str, new: str, batch: int,
                                                  expected: list[dict[str, str]]) -> None:
    members = {n: {"type": SD, "properties": {"input_values": {"v": "a"}}} for n in old}
    before, after = _props({n: f"id-{n}" for n in old}, "a"), _props({n: f"id-{n}" for n in new}, "b")
    ctx = dataclasses.replace(
        make_ctx(after, old_properties=before, resource_name="group", physical_id="c"),
        child=_child({"resources": members}, "create"),
        update_policy={"rolling_update": {"max_batch_size": batch, "min_in_service": 5}})
    stacks, steps = _run(Action.UPDATE, ctx)
    assert stacks == expected  # min_in_service is no deployment group's: none is kept back
    assert steps == [f"batch@{n}" for n in range(1, len(expected))]


@pytest.mark.parametrize(("policy", "old_value", "stacks"), [
    ({}, "a", [{"s00": "b", "s01": "b", "s02": "b"}]),  # no rolling_update: every member at once
    ({"rolling_update": {"max_batch_size": 1}}, "b", [{"s00": "b", "s01": "b", "s02": "b"}]),  # no change
])
def test_an_update_without_batches(policy: dict[str, Any], old_value: str,
                                   stacks: list[dict[str, str]]) -> None:
    servers = _servers(3)
    members = {n: {"type": SD, "properties": {"input_values": {"v": old_value}}} for n in servers}
    ctx = dataclasses.replace(
        make_ctx(_props(servers, "b"), old_properties=_props(servers, old_value), resource_name="group",
                 physical_id="c"),
        child=_child({"resources": members}, "create"), update_policy=policy)
    assert _run(Action.UPDATE, ctx) == (stacks, [])


@pytest.mark.parametrize(("wanted", "existing", "capacity", "expected"), [
    ("abcd", "cd", 3, "acd"),  # those there stay; new ones fill what is left, in the map's order
    ("abcd", "", 2, "ab"),
    ("acd", "abc", 3, "acd"),  # b is no longer wanted
    ("abc", "abc", 5, "abc"),
])
def test_batch_names(wanted: str, existing: str, capacity: int, expected: str) -> None:
    assert batch_names(list(wanted), list(existing), capacity) == list(expected)
