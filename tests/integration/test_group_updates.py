"""A group's updates that leave its members as they are: the nested stack is updated as Heat
updates it (its events, its statuses), whatever shortcut keeps that from costing the group's size."""

from __future__ import annotations

import uuid
from typing import Any

from libs import operations
from libs.config import Settings
from libs.db import stacks, templates
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row

REGISTRY = default_registry()


def _group(count: int, *, removal: list[str] | None = None, value: str = "member-%index%") -> dict[str, Any]:
    props: dict[str, Any] = {"count": count, "resource_def": {
        "type": "OS::Heat::TestResource", "properties": {"value": value}}}
    if removal is not None:
        props["removal_policies"] = [{"resource_list": removal}]
    return hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": props}},
               outputs={"values": {"value": {"get_attr": ["group", "attributes", "output"]}},
                        "removed": {"value": {"get_attr": ["group", "removed_rsrc_list"]}}})


async def _made(api: Runtime, name: str, template: dict[str, Any]) -> tuple[stacks.StackRow, uuid.UUID]:
    """The stack, created, and its group's nested stack."""
    made = await operations.create_stack(api.pool, api.bus, project="demo", name=name,
                                         stack_request=StackRequest(template=template), registry=REGISTRY)
    await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=60)
    return made, uuid.UUID((await resource_rows(api.pool, made.id))["group"].physical_id or "")


def _outputs(row: Any) -> dict[str, Any]:
    return {o["output_key"]: o["output_value"] for o in row.outputs}


async def test_a_group_updated_with_what_it_has_updates_its_nested_stack_and_no_member(
        settings: Settings) -> None:
    async with engine(settings) as api:
        made, child_id = await _made(api, "same", _group(3))
        before = await resource_rows(api.pool, child_id)
        child = await stack_row(api.pool, child_id)
        async with api.pool.acquire() as conn:
            shown = (await templates.get(conn, child.template_id or uuid.uuid4())).template
        seen = len(await event_lines(api.pool, child_id))

        for _ in range(2):
            await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                          stack_request=StackRequest(template=_group(3)), registry=REGISTRY)
            done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
            assert _outputs(done) == {"values": {"0": "member-0", "1": "member-1", "2": "member-2"},
                                      "removed": []}
            again = await stack_row(api.pool, child_id)
            assert again.stack_status == "UPDATE_COMPLETE"
            # The nested stack keeps the template it has: the same one, not a copy made again.
            assert again.template_id == child.template_id
            async with api.pool.acquire() as conn:
                assert (await templates.get(conn, again.template_id or uuid.uuid4())).template == shown
            # Its own update's events and none of a member: each was left alone, as Heat leaves it.
            lines = await event_lines(api.pool, child_id)
            assert [(name, state) for name, state, _ in lines[seen:]] == [
                (child.name, "UPDATE_IN_PROGRESS"), (child.name, "UPDATE_COMPLETE")]
            seen = len(lines)
            after = await resource_rows(api.pool, child_id)
            assert {n: (r.physical_id, r.action, r.status) for n, r in after.items()} == {
                n: (r.physical_id, r.action, r.status) for n, r in before.items()}
            # No member's updated_time moves: recorded from Heat 27.0.1, a no-change update leaves
            # the updated_time of each resource as its create left it.
            assert {n: r.updated_at for n, r in after.items()} == {n: r.updated_at for n, r in before.items()}
            before = after


async def test_a_kept_group_still_follows_a_changed_definition_and_removal(settings: Settings) -> None:
    async with engine(settings) as api:
        made, child_id = await _made(api, "follow", _group(3))
        steps: list[tuple[dict[str, Any], dict[str, Any], list[str], bool]] = [
            (_group(3), {"0": "member-0", "1": "member-1", "2": "member-2"}, [], True),
            (_group(3, removal=["1"]), {"0": "member-0", "2": "member-2", "3": "member-3"}, ["1"], False),
            # The same policy again: nothing more removed, nothing made (Heat's append mode).
            (_group(3, removal=["1"]), {"0": "member-0", "2": "member-2", "3": "member-3"}, ["1"], True),
            (_group(3, removal=["1"], value="new-%index%"), {"0": "new-0", "2": "new-2", "3": "new-3"}, ["1"],
             True),
        ]
        for template, values, removed, same_members in steps:
            kept = await resource_rows(api.pool, child_id)
            await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                          stack_request=StackRequest(template=template), registry=REGISTRY)
            done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
            assert _outputs(done) == {"values": values, "removed": removed}
            members = await resource_rows(api.pool, child_id)
            assert sorted(members, key=int) == list(values)
            if same_members:
                assert {n: r.physical_id for n, r in members.items()} == {
                    n: r.physical_id for n, r in kept.items()}


async def test_a_kept_group_takes_a_changed_environment(settings: Settings) -> None:
    async with engine(settings) as api:
        made, child_id = await _made(api, "env", _group(2))
        child = await stack_row(api.pool, child_id)
        # The parent's environment changed: the nested stack is given it, with the same members.
        env = {"parameter_defaults": {"unused": "given"}}
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=_group(2), environment=env),
                                      registry=REGISTRY)
        done = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        assert _outputs(done)["values"] == {"0": "member-0", "1": "member-1"}
        again = await stack_row(api.pool, child_id)
        assert again.stack_status == "UPDATE_COMPLETE" and again.template_id != child.template_id
        async with api.pool.acquire() as conn:
            stored = await templates.get(conn, again.template_id or uuid.uuid4())
            first = await templates.get(conn, child.template_id or uuid.uuid4())
        assert stored.environment["parameter_defaults"] == {"unused": "given"}
        assert stored.template == first.template


async def test_a_member_added_is_checked_and_the_nested_template_stays_whole(settings: Settings) -> None:
    # ``length: "%index%00"``: members 1 to 5 are 100 to 500 long, member 6 would be 600 (the
    # most is 512). Those kept are not checked again; the new ones are, and fail the update
    # with the message the whole template would have given.
    def group(count: int) -> dict[str, Any]:
        return hot({"group": {"type": "OS::Heat::ResourceGroup", "properties": {
            "count": count, "removal_policies": [{"resource_list": ["0"]}],
            "resource_def": {"type": "OS::Heat::RandomString", "properties": {"length": "%index%00"}}}}})

    async with engine(settings) as api:
        made, child_id = await _made(api, "added", group(2))
        first = await resource_rows(api.pool, child_id)
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=group(6)), registry=REGISTRY)
        failed = await settled(api.pool, made.id, status="UPDATE_FAILED", timeout=60)
        assert failed.status_reason == (
            "Resource UPDATE failed: StackValidationFailed: resources.group: Property error: "
            "resources[6].properties.length: 600 is out of range (min: 1, max: 512)")
        assert {n: r.physical_id for n, r in (await resource_rows(api.pool, child_id)).items()} == {
            n: r.physical_id for n, r in first.items()}

        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, made.id),
                                      stack_request=StackRequest(template=group(5)), registry=REGISTRY)
        await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=60)
        members = await resource_rows(api.pool, child_id)
        assert sorted(members, key=int) == ["1", "2", "3", "4", "5"]
        assert {n: members[n].physical_id for n in first} == {n: r.physical_id for n, r in first.items()}
        # The template the nested stack is given is whole, the kept members in it as they were.
        child = await stack_row(api.pool, child_id)
        async with api.pool.acquire() as conn:
            stored = (await templates.get(conn, child.template_id or uuid.uuid4())).template
        assert stored["resources"] == {str(i): {"type": "OS::Heat::RandomString",
                                                "properties": {"length": f"{i}00"}} for i in range(1, 6)}
