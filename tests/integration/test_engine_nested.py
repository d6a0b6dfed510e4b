"""Nested stacks: ``OS::Heat::Stack`` makes a real child stack, driven by the same engine."""

from __future__ import annotations

import dataclasses
import uuid

import asyncpg
import yaml

from libs import operations
from libs.config import Settings
from libs.db import events, resources, stacks
from libs.engine.status import Action
from libs.resources.registry import default_registry
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, hot, resource_rows, settled, stack_row

CHILD = yaml.safe_dump({
    "heat_template_version": "2016-10-14",
    "parameters": {"word": {"type": "string"}},
    "resources": {"inner": {"type": "OS::Heat::TestResource",
                            "properties": {"value": {"get_param": "word"}}}},
    "outputs": {"said": {"value": {"get_attr": ["inner", "output"]}}},
})


def _parent(word: str) -> dict[str, object]:
    return hot({"nest": {"type": "OS::Heat::Stack",
                         "properties": {"template": CHILD, "parameters": {"word": word}}},
                "after": {"type": "OS::Heat::Value",
                          "properties": {"value": {"get_attr": ["nest", "outputs", "said"]}}}},
               outputs={"heard": {"value": {"get_attr": ["after", "value"]}}})


async def test_a_nested_stack_is_created_updated_and_deleted_with_its_parent(settings: Settings) -> None:
    registry = default_registry()
    async with engine(settings) as api:
        parent = await operations.create_stack(api.pool, api.bus, project="demo", name="outer",
                                               stack_request=StackRequest(template=_parent("hi")),
                                               registry=registry)
        done = await settled(api.pool, parent.id, status="CREATE_COMPLETE", timeout=60)
        assert done.outputs[0]["output_value"] == "hi"
        nest = (await resource_rows(api.pool, parent.id))["nest"]
        async with api.pool.acquire() as conn:
            child = await stacks.get(conn, uuid.UUID(nest.physical_id or ""))
        assert child is not None and child.parent_id == parent.id and child.nested_depth == 1
        assert child.name.startswith("outer-nest-") and child.stack_status == "CREATE_COMPLETE"
        inner = (await resource_rows(api.pool, child.id))["inner"]
        assert inner.properties is not None and inner.properties["value"] == "hi"
        assert nest.attributes["outputs"] == {"said": "hi"}

        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, parent.id),
                                      stack_request=StackRequest(template=_parent("bye")), registry=registry)
        done = await settled(api.pool, parent.id, status="UPDATE_COMPLETE", timeout=60)
        assert done.outputs[0]["output_value"] == "bye"
        assert (await stack_row(api.pool, child.id)).stack_status == "UPDATE_COMPLETE"

        await operations.delete_stack(api.pool, api.bus, await stack_row(api.pool, parent.id))
        await settled(api.pool, parent.id, status="DELETE_COMPLETE", timeout=60)
        gone = await stack_row(api.pool, child.id)
        assert gone.stack_status == "DELETE_COMPLETE" and gone.deleted_at is not None


async def test_a_bad_nested_template_fails_the_resource(settings: Settings) -> None:
    bad = hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": "heat_template_version: 1"}}})
    async with engine(settings) as api:
        parent = await operations.create_stack(api.pool, api.bus, project="demo", name="broken",
                                               stack_request=StackRequest(template=bad))
        done = await settled(api.pool, parent.id, status="CREATE_FAILED", timeout=60)
        assert "resources.nest" in done.status_reason


async def test_a_nested_stack_that_cannot_be_stored_fails_the_resource(settings: Settings) -> None:
    # The child's template has an integer past 64 bits, which Ember's JSON codec cannot store
    # (templates are kept as json text, so a NUL character is stored, as Heat stores it): not a
    # template error, but one that would happen on every retry. The resource fails, never retries.
    child = ('heat_template_version: 2016-10-14\n'
             'resources:\n  r: {type: OS::Heat::None, metadata: {k: 100000000000000000000000}}\n')
    template = hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": child}}})
    async with engine(settings) as api:
        parent = await operations.create_stack(api.pool, api.bus, project="demo", name="unstorable",
                                               stack_request=StackRequest(template=template))
        done = await settled(api.pool, parent.id, status="CREATE_FAILED", timeout=60)
        assert done.status_reason.startswith("Resource CREATE failed: ")
        assert "resources.nest" in done.status_reason
        assert (await resource_rows(api.pool, parent.id))["nest"].status == "FAILED"


async def test_provider_templates_by_file_name_and_by_registry(settings: Settings) -> None:
    parent = hot({"direct": {"type": "child.yaml", "properties": {"word": "one"}},
                  "mapped": {"type": "My::Child", "properties": {"word": {"get_attr": ["direct", "said"]}}}},
                 outputs={"both": {"value": {"list_join": ["+", [{"get_attr": ["direct", "said"]},
                                                                   {"get_attr": ["mapped", "said"]}]]}}})
    env = {"resource_registry": {"My::Child": "child.yaml"}}
    async with engine(settings) as api:
        made = await operations.create_stack(
            api.pool, api.bus, project="demo", name="prov",
            stack_request=StackRequest(template=parent, files={"child.yaml": CHILD}, environment=env),
            registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        assert done.outputs[0]["output_value"] == "one+one"
        rows = await resource_rows(api.pool, made.id)
        assert rows["mapped"].type == "My::Child" and rows["direct"].type == "child.yaml"
        async with api.pool.acquire() as conn:
            nested = await stacks.children(conn, made.id)
        assert sorted(n.split("-")[1] for n in nested.values()) == ["direct", "mapped"]
        assert {str(k) for k in nested} == {rows["direct"].physical_id, rows["mapped"].physical_id}

        await operations.delete_stack(api.pool, api.bus, await stack_row(api.pool, made.id))
        await settled(api.pool, made.id, status="DELETE_COMPLETE", timeout=60)
        for child_id in nested:
            assert (await stack_row(api.pool, child_id)).stack_status == "DELETE_COMPLETE"


def _group(count: int, removal: list[str] | None = None) -> dict[str, object]:
    props: dict[str, object] = {"count": count, "resource_def": {
        "type": "OS::Heat::TestResource", "properties": {"value": "member-%index%"}}}
    if removal is not None:
        props["removal_policies"] = [{"resource_list": removal}]
    return hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": props}},
               outputs={"refs": {"value": {"get_attr": ["group", "refs"]}},
                        "values": {"value": {"get_attr": ["group", "attributes", "output"]}},
                        "first": {"value": {"get_attr": ["group", "resource.0.output"]}}})


async def test_a_group_keeps_of_its_members_only_what_its_stack_reads(settings: Settings) -> None:
    def template(outputs: dict[str, object]) -> dict[str, object]:
        return hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {"count": 4, "resource_def": {
            "type": "OS::Heat::TestResource", "properties": {"value": "member-%index%"}}}}}, outputs=outputs)

    registry = default_registry()
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="quiet",
                                             stack_request=StackRequest(template=template({})),
                                             registry=registry)
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        group = (await resource_rows(api.pool, made.id))["group"]
        child = await stack_row(api.pool, uuid.UUID(group.physical_id or ""))
        # Nothing reads the group: neither it nor its nested stack keeps a value the size of the group.
        assert child.outputs == [] and group.attributes == {"removed_rsrc_list": []}
        assert not any(key.startswith("nested_") for key in group.data), group.data

        one = template({"second": {"value": {"get_attr": ["group", "resource.1.output"]}}})
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=one), registry=registry)
        done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        assert done.outputs[0]["output_value"] == "member-1"
        group = (await resource_rows(api.pool, made.id))["group"]
        assert "refs" not in group.attributes and not any(key.startswith("nested_") for key in group.data)


async def test_a_resource_group_grows_shrinks_and_removes_by_name(settings: Settings) -> None:
    registry = default_registry()
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="grp",
                                             stack_request=StackRequest(template=_group(3)),
                                             registry=registry)
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["values"] == {"0": "member-0", "1": "member-1", "2": "member-2"}
        assert outputs["first"] == "member-0" and len(outputs["refs"]) == 3
        group = (await resource_rows(api.pool, made.id))["group"]
        child_id = uuid.UUID(group.physical_id or "")

        async def members() -> list[str]:
            return sorted((await resource_rows(api.pool, child_id)), key=int)

        for count, removal, expected in ((5, None, ["0", "1", "2", "3", "4"]), (2, None, ["0", "1"]),
                                         (2, ["0"], ["1", "2"]), (3, None, ["1", "2", "3"])):
            await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                          stack_request=StackRequest(template=_group(count, removal)),
                                          registry=registry)
            done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
            assert await members() == expected, (count, removal)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["values"] == {"1": "member-1", "2": "member-2", "3": "member-3"}


async def test_a_resource_chain_makes_each_after_the_one_before(settings: Settings) -> None:
    chain = hot({"chain": {"type": "OS::Heat::ResourceChain", "properties": {
        "resources": ["OS::Heat::TestResource", "OS::Heat::None", "OS::Heat::TestResource"],
        "resource_properties": {"value": "same"}}}},
        outputs={"refs": {"value": {"get_attr": ["chain", "refs"]}},
                 "last": {"value": {"get_attr": ["chain", "resource.2.output"]}}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="chain",
                                             stack_request=StackRequest(template=chain),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["last"] == "same" and len(outputs["refs"]) == 3
        child_id = uuid.UUID((await resource_rows(api.pool, made.id))["chain"].physical_id or "")
        async with api.pool.acquire() as conn:
            lines = [(e.resource_name, e.resource_status)
                     for e in await events.for_stack(conn, child_id) if e.resource_name in ("0", "1", "2")]
        assert [n for n, s in lines if s.endswith("COMPLETE")] == ["0", "1", "2"]
        assert lines.index(("0", "CREATE_COMPLETE")) < lines.index(("1", "CREATE_IN_PROGRESS"))


def _rolling(value: str) -> dict[str, object]:
    template = hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {
        "count": 4, "resource_def": {"type": "OS::Heat::TestResource", "properties": {"value": value}}}}},
        outputs={"values": {"value": {"get_attr": ["group", "attributes", "output"]}}})
    template["resources"]["group"]["update_policy"] = {
        "rolling_update": {"max_batch_size": 2, "min_in_service": 2, "pause_time": 0.2}}
    return template


async def test_a_rolling_update_replaces_members_in_batches(settings: Settings) -> None:
    registry = default_registry()
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="roll",
                                             stack_request=StackRequest(template=_rolling("a")),
                                             registry=registry)
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=_rolling("b")), registry=registry)
        done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        assert done.outputs[0]["output_value"] == {str(i): "b" for i in range(4)}
        child = uuid.UUID((await resource_rows(api.pool, made.id))["group"].physical_id or "")
        async with api.pool.acquire() as conn:
            lines = [(e.resource_name, e.resource_status, e.reason)
                     for e in await events.for_stack(conn, child)]
        updates = [line for line in lines if line[2] == "Stack UPDATE completed successfully"]
        assert len(updates) >= 2  # one nested update per batch
        finished = [name for name, state, _ in lines if state == "UPDATE_COMPLETE" and name != lines[0][0]]
        # Heat's ResourceGroup updates the highest indices first.
        assert sorted(finished[:2]) == ["2", "3"] and sorted(finished[2:4]) == ["0", "1"]


async def test_batch_create_makes_members_a_batch_at_a_time(settings: Settings) -> None:
    template = hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {
        "count": 5, "resource_def": {"type": "OS::Heat::TestResource", "properties": {"value": "x"}}},
        "update_policy": {"batch_create": {"max_batch_size": 2, "pause_time": 0.1}}}},
        outputs={"refs": {"value": {"get_attr": ["group", "refs"]}}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="batches",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        assert len(done.outputs[0]["output_value"]) == 5
        child = uuid.UUID((await resource_rows(api.pool, made.id))["group"].physical_id or "")
        assert sorted(await resource_rows(api.pool, child), key=int) == ["0", "1", "2", "3", "4"]
        async with api.pool.acquire() as conn:
            reasons = [e.reason for e in await events.for_stack(conn, child) if e.resource_name != "0"
                       and e.resource_type == "OS::Heat::Stack"]
        assert reasons.count("Stack CREATE completed successfully") == 1
        assert reasons.count("Stack UPDATE completed successfully") == 2  # two more batches: 4, then 5


async def test_many_nested_stacks_at_once_do_not_starve_the_pool(settings: Settings) -> None:
    # Each nesting step holds a connection for its lock and borrows one to make its
    # child: with more such steps than connections, they must take turns, not wait forever.
    small = dataclasses.replace(settings, db_pool_size=6)
    child = "heat_template_version: 2016-10-14\nresources:\n  inner: {type: OS::Heat::None}\n"
    template = hot({f"n{i}": {"type": "OS::Heat::Stack", "properties": {"template": child}}
                    for i in range(12)})
    async with engine(small) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="many",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        async with api.pool.acquire() as conn:
            assert len(await stacks.children(conn, made.id)) == 12


async def test_check_suspend_and_resume_go_through_nested_stacks(settings: Settings) -> None:
    registry = default_registry()
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="through",
                                             stack_request=StackRequest(template=_parent("x")),
                                             registry=registry)
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        child = uuid.UUID((await resource_rows(api.pool, made.id))["nest"].physical_id or "")
        for action in (Action.SUSPEND, Action.RESUME, Action.CHECK):
            await operations.stack_action(api.pool, api.bus, await stack_row(api.pool, made.id), action)
            await settled(api.pool, made.id, status=f"{action}_COMPLETE", timeout=60)
            assert (await stack_row(api.pool, child)).stack_status == f"{action}_COMPLETE"
            inner = (await resource_rows(api.pool, child))["inner"]
            assert inner.action == action and inner.status == "COMPLETE"


async def test_a_resource_marked_unhealthy_is_replaced_by_the_next_update(settings: Settings) -> None:
    template = hot({"r": {"type": "OS::Heat::TestResource", "properties": {"value": "same"}}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="sick",
                                             stack_request=StackRequest(template=template))
        await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        before = (await resource_rows(api.pool, made.id))["r"]
        async with api.pool.acquire() as conn:  # what PATCH .../resources/r {"mark_unhealthy": true} does
            await resources.write(conn, before, action="CHECK", status="FAILED", status_reason="broken")
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=template))
        await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        after = (await resource_rows(api.pool, made.id))["r"]
        assert after.id != before.id and after.physical_id != before.physical_id
        assert after.action == "CREATE" and after.status == "COMPLETE"


async def test_a_provider_template_sees_its_parent_through_resource_facade(settings: Settings) -> None:
    facade_child = yaml.safe_dump({
        "heat_template_version": "2016-10-14",
        "resources": {"inner": {"type": "OS::Heat::Value",
                                "properties": {"value": {"resource_facade": "deletion_policy"}}}},
        "outputs": {"role": {"value": {"resource_facade": "metadata"}},
                    "policy": {"value": {"get_attr": ["inner", "value"]}}},
    })
    parent = hot({"web": {"type": "facade.yaml", "metadata": {"role": "frontend"},
                          "deletion_policy": "Retain"}},
                 outputs={"meta": {"value": {"get_attr": ["web", "role"]}},
                          "policy": {"value": {"get_attr": ["web", "policy"]}}})
    async with engine(settings) as api:
        made = await operations.create_stack(
            api.pool, api.bus, project="demo", name="faces",
            stack_request=StackRequest(template=parent, files={"facade.yaml": facade_child}),
            registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs == {"meta": {"role": "frontend"}, "policy": "Retain"}


def _asg(value: str) -> dict[str, object]:
    return hot({"asg": {"type": "OS::Heat::AutoScalingGroup", "properties": {
        "min_size": 1, "max_size": 5, "desired_capacity": 3,
        "rolling_updates": {"max_batch_size": 1, "min_in_service": 2},
        "resource": {"type": "OS::Heat::TestResource", "properties": {"value": value}}}}},
        outputs={"values": {"value": {"get_attr": ["asg", "outputs", "output"]}}})


async def test_an_auto_scaling_group_rolls_a_changed_definition_one_member_at_a_time(
        settings: Settings) -> None:
    registry = default_registry()
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="asgroll",
                                             stack_request=StackRequest(template=_asg("a")),
                                             registry=registry)
        created = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
        before = created.outputs[0]["output_value"]
        assert sorted(before.values()) == ["a", "a", "a"]
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=_asg("b")), registry=registry)
        done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        after = done.outputs[0]["output_value"]
        assert set(after) == set(before) and sorted(after.values()) == ["b", "b", "b"]
        child = uuid.UUID((await resource_rows(api.pool, made.id))["asg"].physical_id or "")
        async with api.pool.acquire() as conn:
            reasons = [e.reason for e in await events.for_stack(conn, child)
                       if e.resource_type == "OS::Heat::Stack"]
        assert reasons.count("Stack UPDATE completed successfully") == 3  # a member per batch


def _groups_of(definition: dict[str, object], count: int = 2,
               index_var: str = "%index%") -> dict[str, object]:
    """A ResourceGroup of ``count`` members as ``definition``, its index named ``index_var``."""
    return {"type": "OS::Heat::ResourceGroup",
            "properties": {"count": count, "index_var": index_var, "resource_def": definition}}


async def _member_refs(pool: asyncpg.Pool, stack_id: str | None) -> dict[str, object]:
    """name -> reference of the current rows of the nested stack ``stack_id``, as get_resource gives them."""
    rows = await resource_rows(pool, uuid.UUID(stack_id or ""))
    return {name: rows[name].known_reference() for name in sorted(rows, key=int)}


async def test_a_group_of_groups_answers_the_inner_groups_attributes(settings: Settings) -> None:
    # Heat: a read through the outer group of an inner group's own attribute is the inner
    # group's answer (refs: its members' references in index order) for each member.
    def template(count: int) -> dict[str, object]:
        inner = _groups_of({"type": "OS::Heat::TestResource", "properties": {"value": "v-%a%-%index%"}},
                           count)
        return hot({"outer": _groups_of(inner, index_var="%a%")}, outputs=reads)

    reads: dict[str, object] = {
        "each_refs": {"value": {"get_attr": ["outer", "attributes", "refs"]}},
        "first_refs": {"value": {"get_attr": ["outer", "resource.0.refs"]}},
        "first_refs_path": {"value": {"get_attr": ["outer", "resource.0", "refs"]}},
        "second_map": {"value": {"get_attr": ["outer", "resource.1.refs_map"]}},
        "second_ref0": {"value": {"get_attr": ["outer", "resource.1", "refs", 0]}},
        "outer_refs": {"value": {"get_attr": ["outer", "refs"]}},
        "values": {"value": {"get_attr": ["outer", "attributes", "output"]}},
        "missing": {"value": {"get_attr": ["outer", "resource.0.resource.5.output"]}}}
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="gog",
                                             stack_request=StackRequest(template=template(2)),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=90)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        outer = (await resource_rows(api.pool, made.id))["outer"]
        inners = await resource_rows(api.pool, uuid.UUID(outer.physical_id or ""))
        refs = {name: list((await _member_refs(api.pool, inners[name].physical_id)).values())
                for name in ("0", "1")}
        assert outputs["outer_refs"] == [inners["0"].physical_id, inners["1"].physical_id]
        assert outputs["each_refs"] == refs and all(len(r) == 2 and None not in r for r in refs.values())
        assert outputs["first_refs"] == refs["0"] and outputs["first_refs_path"] == refs["0"]
        assert outputs["second_map"] == {"0": refs["1"][0], "1": refs["1"][1]}
        assert outputs["second_ref0"] == refs["1"][0]
        assert outputs["values"] == {"0": ["v-0-0", "v-0-1"], "1": ["v-1-0", "v-1-1"]}
        # Heat: the inner group's own failure to answer is the output's error.
        missing = next(o for o in done.outputs if o["output_key"] == "missing")
        assert missing.get("output_value") is None
        assert "Member '5' not found in group resource '0'" in str(missing.get("output_error")), missing

        # The inner groups grow: the answers read through the outer group follow.
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=template(3)),
                                      registry=default_registry())
        done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=90)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["values"] == {a: [f"v-{a}-{b}" for b in "012"] for a in "01"}
        assert [len(r) for r in outputs["each_refs"].values()] == [3, 3] and len(outputs["first_refs"]) == 3


async def test_three_levels_of_groups_answer_through_each_level(settings: Settings) -> None:
    inner = _groups_of({"type": "OS::Heat::TestResource", "properties": {"value": "v-%a%-%b%-%index%"}})
    template = hot({"top": _groups_of(_groups_of(inner, index_var="%b%"), index_var="%a%")}, outputs={
        "deep": {"value": {"get_attr": ["top", "resource.0.resource.1.output"]}},
        "deep_path": {"value": {"get_attr": ["top", "resource.1", "resource.0", "output"]}},
        "every": {"value": {"get_attr": ["top", "attributes", "attributes", "output"]}},
        "mid_refs": {"value": {"get_attr": ["top", "resource.1.refs"]}},
        "leaf_refs": {"value": {"get_attr": ["top", "resource.0.resource.1.refs"]}}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="three",
                                             stack_request=StackRequest(template=template),
                                             registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=120)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["deep"] == ["v-0-1-0", "v-0-1-1"]
        assert outputs["deep_path"] == ["v-1-0-0", "v-1-0-1"]
        assert outputs["every"] == {a: {b: [f"v-{a}-{b}-{c}" for c in "01"] for b in "01"} for a in "01"}
        top = (await resource_rows(api.pool, made.id))["top"]
        mids = await resource_rows(api.pool, uuid.UUID(top.physical_id or ""))
        mid1 = await _member_refs(api.pool, mids["1"].physical_id)
        assert outputs["mid_refs"] == list(mid1.values())
        mid0 = await resource_rows(api.pool, uuid.UUID(mids["0"].physical_id or ""))
        leaves = await _member_refs(api.pool, mid0["1"].physical_id)
        assert outputs["leaf_refs"] == list(leaves.values()) and None not in outputs["leaf_refs"]


async def test_a_group_of_provider_templates_answers_their_outputs(settings: Settings) -> None:
    template = hot({"outer": _groups_of({"type": "child.yaml", "properties": {"word": "w-%index%"}})},
                   outputs={"each": {"value": {"get_attr": ["outer", "attributes", "said"]}},
                            "listed": {"value": {"get_attr": ["outer", "said"]}},
                            "second": {"value": {"get_attr": ["outer", "resource.1.said"]}}})
    async with engine(settings) as api:
        made = await operations.create_stack(
            api.pool, api.bus, project="demo", name="provgrp",
            stack_request=StackRequest(template=template, files={"child.yaml": CHILD}),
            registry=default_registry())
        done = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=90)
        outputs = {o["output_key"]: o["output_value"] for o in done.outputs}
        assert outputs["each"] == {"0": "w-0", "1": "w-1"}
        assert outputs["listed"] == ["w-0", "w-1"] and outputs["second"] == "w-1"
