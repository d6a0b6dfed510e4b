"""Which members a resource group has for a count and the names removal policies took out."""

from __future__ import annotations

import pytest

from libs.resources.resource_group import member_names


@pytest.mark.parametrize(("count", "removed", "expected"), [
    (3, set(), ["0", "1", "2"]),
    (5, set(), ["0", "1", "2", "3", "4"]),
    (2, set(), ["0", "1"]),  # a shrink drops the highest indices
    (2, {"0"}, ["1", "2"]),  # a removed name goes first and is never used again
    (3, {"0", "2"}, ["1", "3", "4"]),
    (0, {"1"}, []),
])
def test_member_names(count: int, removed: set[str], expected: list[str]) -> None:
    assert member_names(count, removed) == expected


@pytest.mark.parametrize(("target", "current", "batch", "min_in_service", "expected"), [
    # (members during each batch, members it updates), as Heat's rolling_update gives them
    (4, 4, 2, 0, [(4, 2), (4, 2)]),
    (4, 4, 1, 3, [(4, 1), (4, 1), (4, 1), (4, 1)]),
    (3, 3, 2, 3, [(5, 2), (5, 2), (4, 1), (3, 0)]),  # grows for a while to keep three in service
    (2, 4, 1, 0, [(2, 1), (2, 1)]),
])
def test_rolling_batches(target: int, current: int, batch: int, min_in_service: int,
                         expected: list[tuple[int, int]]) -> None:
    from libs.resources import rolling
    seen = []
    up_to_date = 0
    while rolling.needs_update(target, current, up_to_date):
        capacity, count = rolling.next_batch(target, current, up_to_date, batch, min_in_service)
        seen.append((capacity, count))
        current, up_to_date = rolling.after_batch(target, current, up_to_date, capacity, count)
    assert seen == expected


def _group_props(value: str, count: int) -> dict[str, object]:
    return {"count": count, "index_var": "%index%", "removal_policies": [], "removal_policies_mode": "append",
            "resource_def": {"type": "OS::Heat::TestResource", "properties": {"value": value}}}


@pytest.mark.parametrize(("count", "batch", "min_in_service", "expected"), [
    # each batch's members and the value each has; a member added for a moment to keep
    # min_in_service starts with the new definition (Heat's member_definitions); existing
    # members take it highest index first (Heat's replace_priority)
    (2, 1, 2, [{"0": "a", "1": "a", "2": "b"}, {"0": "a", "1": "b", "2": "b"},
               {"0": "b", "1": "b", "2": "b"}, {"0": "b", "1": "b"}]),
    (3, 2, 3, [{"0": "a", "1": "a", "2": "a", "3": "b", "4": "b"},
               {"0": "a", "1": "b", "2": "b", "3": "b", "4": "b"},
               {"0": "b", "1": "b", "2": "b", "3": "b"}, {"0": "b", "1": "b", "2": "b"}]),
    (4, 2, 0, [{"0": "a", "1": "a", "2": "b", "3": "b"}, {"0": "b", "1": "b", "2": "b", "3": "b"}]),
])
def test_a_rolling_update_gives_each_batch_its_members(count: int, batch: int, min_in_service: int,
                                                      expected: list[dict[str, str]]) -> None:
    import dataclasses

    from libs.engine.status import Action
    from libs.resources.resource_group import ResourceGroup, members_template
    from libs.resources.steps import ChildStack, Nest, StepContext, Wait

    group = ResourceGroup()
    members = {str(i): {"type": "OS::Heat::TestResource", "properties": {"value": "a"}} for i in range(count)}

    def child(template: dict[str, object]) -> ChildStack:
        names = list(template["resources"])  # type: ignore[call-overload]
        return ChildStack(id="c", name="c", action="UPDATE", status="COMPLETE", status_reason="",
                          size=len(names))

    ctx = StepContext(stack_id="s", stack_name="s", resource_name="group", physical_id="c",
                      properties=_group_props("b", count), old_properties=_group_props("a", count), data={},
                      now=0.0, started_at=0.0, short_id="abcdefghijkl",
                      child=child(members_template(members)),
                      update_policy={"rolling_update": {"max_batch_size": batch,
                                                        "min_in_service": min_in_service}})
    seen = []
    steps = []
    result = group.start(Action.UPDATE, ctx)
    while isinstance(result, Nest | Wait):
        data = {**ctx.data, **{k: v for k, v in result.data.items() if v is not None}}
        if isinstance(result, Wait):  # between two batches: the named step a breakpoint holds
            steps.append(result.step)
            ctx = dataclasses.replace(ctx, data=data)
        else:
            resources = result.template["resources"]
            seen.append({n: r["properties"]["value"] for n, r in resources.items()})
            ctx = dataclasses.replace(ctx, data=data, child=child(result.template))
        result = group.check(Action.UPDATE, ctx)
    assert seen == expected
    assert steps == [f"batch@{n}" for n in range(1, len(expected))]


@pytest.mark.parametrize(("type_name", "policy", "message"), [
    ("OS::Heat::ResourceGroup", {"rolling_update": {"min_in_service": 1, "max_batch_size": "2",
                                                    "pause_time": 0.5}}, None),
    ("OS::Heat::ResourceGroup", {"rolling_update": {"max_batch_size": "two"}},
     "resources.g.update_policy.rolling_update.max_batch_size: Value 'two' is not an integer"),
    ("OS::Heat::ResourceGroup", {"rolling_update": {"min_in_service": -1}},
     "resources.g.update_policy.rolling_update.min_in_service: -1 is out of range (min: 0, max: None)"),
    ("OS::Heat::SoftwareDeploymentGroup", {"batch_create": {"max_batch_size": 3}}, None),
    ("OS::Heat::AutoScalingGroup", {"rolling_update": {}},
     "resources.g.update_policy: Unknown Property rolling_update"),  # Heat's takes none
    ("OS::Heat::InstanceGroup", {"RollingUpdate": {"MinInstancesInService": 1, "PauseTime": "PT1M"}}, None),
    ("OS::Heat::None", {"rolling_update": {}}, "resources.g.update_policy: Unknown Property rolling_update"),
])
def test_the_update_policy_is_validated_against_the_types_schema(type_name: str, policy: dict[str, object],
                                                                 message: str | None) -> None:
    from libs.resources.registry import default_registry
    from libs.template.errors import StackValidationFailed

    plugin = default_registry().get(type_name)
    if message is None:
        plugin.validate_update_policy(policy, resource_name="g")
        return
    with pytest.raises(StackValidationFailed) as caught:
        plugin.validate_update_policy(policy, resource_name="g")
    assert str(caught.value) == f"Property error: {message}"


def _updated_from(group_type: str, recorded: dict[str, object], now: dict[str, object],
                  *, child: bool = True) -> object:
    """What the group's update asks of its nested stack, made with ``recorded`` and updated to ``now``."""
    import dataclasses

    from libs.engine.status import Action
    from libs.resources.registry import default_registry
    from libs.resources.steps import ChildStack, Nest, StepContext

    group = default_registry().get(group_type)
    ctx = StepContext(stack_id="s", stack_name="s", resource_name="group", physical_id="c",
                      properties=recorded, old_properties=None, data={}, now=0.0, started_at=0.0,
                      short_id="abcdefghijkl")
    made = group.start(Action.CREATE, ctx)
    assert isinstance(made, Nest)
    data = {k: v for k, v in made.data.items() if v is not None}
    nested = ChildStack(id="c", name="c", action="CREATE", status="COMPLETE", status_reason="", size=3)
    ctx = dataclasses.replace(ctx, properties=now, old_properties=recorded, data=data,
                              child=nested if child else None)
    return group.start(Action.UPDATE, ctx)


@pytest.mark.parametrize(("now", "kept"), [
    (_group_props("a", 3), True),  # the same members: the nested stack keeps its template
    ({**_group_props("a", 3), "removal_policies_mode": "update"}, True),  # nothing was removed either way
    (_group_props("b", 3), False),
    (_group_props("a", 4), False),
    ({**_group_props("a", 3), "removal_policies": [{"resource_list": ["1"]}]}, False),
    ({**_group_props("a", 3), "index_var": "%n%"}, False),
])
def test_an_update_that_would_make_the_same_members_keeps_the_nested_template(
        now: dict[str, object], kept: bool) -> None:
    from libs.resources.steps import KEEP, Nest

    asked = _updated_from("OS::Heat::ResourceGroup", _group_props("a", 3), now)
    assert isinstance(asked, Nest) and asked.operation == "update"
    assert (asked.template is KEEP) is kept
    if not kept:
        assert isinstance(asked.template, dict) and asked.data.get("members_source")


@pytest.mark.parametrize(("now", "checked"), [
    # Members added or removed, the definition as it was: those kept were checked when made.
    (_group_props("a", 5), {"0", "1", "2"}),
    (_group_props("a", 2), {"0", "1"}),
    ({**_group_props("a", 3), "removal_policies": [{"resource_list": ["1"]}]}, {"0", "2"}),
    # Another definition: every member is checked with it.
    (_group_props("b", 4), set()),
    ({**_group_props("a", 4), "index_var": "%n%"}, set()),
])
def test_an_update_that_adds_or_removes_members_has_only_the_new_ones_checked(
        now: dict[str, object], checked: set[str]) -> None:
    from libs.resources.steps import Nest

    asked = _updated_from("OS::Heat::ResourceGroup", _group_props("a", 3), now)
    assert isinstance(asked, Nest) and asked.operation == "update" and isinstance(asked.template, dict)
    assert asked.checked == checked
    # The template given is whole all the same.
    assert len(asked.template["resources"]) == now["count"]


def test_what_an_earlier_version_recorded_has_every_member_checked() -> None:
    import dataclasses

    from libs.engine.status import Action
    from libs.resources.registry import default_registry
    from libs.resources.steps import KEEP, ChildStack, Nest, StepContext

    group = default_registry().get("OS::Heat::ResourceGroup")
    nested = ChildStack(id="c", name="c", action="CREATE", status="COMPLETE", status_reason="", size=3)
    ctx = StepContext(stack_id="s", stack_name="s", resource_name="group", physical_id="c",
                      properties=_group_props("a", 4), old_properties=_group_props("a", 3),
                      data={"members_source": "3f" * 32}, now=0.0, started_at=0.0, short_id="abcdefghijkl",
                      child=nested)
    asked = group.start(Action.UPDATE, ctx)
    assert isinstance(asked, Nest) and isinstance(asked.template, dict)
    assert asked.checked == frozenset() and sorted(asked.template["resources"]) == ["0", "1", "2", "3"]
    # What it records now is read back by the next update.
    recorded = {k: v for k, v in asked.data.items() if v is not None}
    again = group.start(Action.UPDATE, dataclasses.replace(ctx, data=recorded))
    assert isinstance(again, Nest) and again.template is KEEP


def test_the_nested_template_is_made_again_where_the_group_cannot_know_it() -> None:
    from libs.resources.steps import KEEP, Nest

    # No nested stack to keep a template of.
    alone = _updated_from("OS::Heat::ResourceGroup", _group_props("a", 3), _group_props("a", 3), child=False)
    assert isinstance(alone, Nest) and isinstance(alone.template, dict)
    # A deployment group's members are made of more than its own properties: always made again.
    props: dict[str, object] = {"servers": {"a": "s1"}, "config": "c", "actions": ["CREATE", "UPDATE"],
                                "input_values": {}, "signal_transport": "NO_SIGNAL", "name": None}
    deployments = _updated_from("OS::Heat::SoftwareDeploymentGroup", props, props)
    assert isinstance(deployments, Nest) and deployments.template is not KEEP


@pytest.mark.parametrize(("definition", "var", "name", "expected"), [
    ({"type": "T", "properties": {"a": "x-%index%", "b": ["%index%", {"c": "%index%%index%"}]}},
     "%index%", "12",
     {"type": "T", "properties": {"a": "x-12", "b": ["12", {"c": "1212"}]}}),
    # Only string values change: not keys, numbers, booleans or the type.
    ({"type": "%index%", "properties": {"%index%": "%index%"}}, "%index%", "3",
     {"type": "%index%", "properties": {"%index%": "3"}}),
    ({"type": "T", "properties": {"n": 12345, "s": "123", "t": True}}, "123", "7",
     {"type": "T", "properties": {"n": 12345, "s": "7", "t": True}}),
    ({"type": "T", "properties": {"q": 'say "%i"'}}, '"%i"', "4",
     {"type": "T", "properties": {"q": "say 4"}}),
    ({"type": "T", "metadata": {"m": "é%idx%"}, "properties": {}}, "%idx%", "0",
     {"type": "T", "metadata": {"m": "é0"}}),
    ({"type": "T"}, "%index%", "1", {"type": "T"}),
])
def test_each_member_has_the_index_in_the_string_values_of_its_definition(
        definition: dict[str, object], var: str, name: str, expected: dict[str, object]) -> None:
    from libs.resources.resource_group import member_maker

    make = member_maker(definition, var)
    assert make(name) == expected
    # Each member its own copy: changing one changes no other.
    assert make(name) is not make(name)
