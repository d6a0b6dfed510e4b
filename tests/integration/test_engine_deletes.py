"""Deletes that end, and newer work that cancels older work instead of waiting on it.

Each case hung before (a delete retrying a ``KeyError`` for ever, a delete or an
update waiting out a nested stack's long update); each test has a deadline well
below the wait it must not sit out. The events expected are those real Heat
27.0.1 wrote for the same requests (recorded by hand, as the harness of
``tests/heat_parity`` cannot wait for a resource in a nested stack to be under
way); the delete cases without such a wait are parity cases too
(``tests/heat_parity/cases/deletes``).
"""

from __future__ import annotations

import time
import uuid

import pytest
import yaml

from libs import operations
from libs.config import Settings
from libs.db import traversals
from libs.messaging.payloads import PlanRequest
from libs.resources.registry import default_registry
from libs.runtime import Runtime
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually

FAILING = yaml.safe_dump({
    "heat_template_version": "2016-10-14",
    "resources": {"inner": {"type": "OS::Heat::TestResource", "properties": {"fail": True}}},
})
# A nested template whose resource takes ``secs`` over an update.
SLOW_CHILD = yaml.safe_dump({
    "heat_template_version": "2016-10-14",
    "parameters": {"word": {"type": "string"}, "secs": {"type": "number", "default": 0}},
    "resources": {"inner": {"type": "OS::Heat::TestResource",
                            "properties": {"value": {"get_param": "word"},
                                           "action_wait_secs": {"update": {"get_param": "secs"}}}}},
    "outputs": {"said": {"value": {"get_attr": ["inner", "output"]}}},
})
# Far longer than any deadline below: a test that waits it out fails on its deadline.
LONG = 600


def _slow_parent(word: str, secs: float = 0) -> dict[str, object]:
    return hot({"res": {"type": "child.yaml", "properties": {"word": word, "secs": secs}}})


async def _create(api: Runtime, name: str, template: dict[str, object], *,
                  files: dict[str, str] | None = None, environment: dict[str, object] | None = None
                  ) -> uuid.UUID:
    made = await operations.create_stack(
        api.pool, api.bus, project="demo", name=name, registry=default_registry(),
        stack_request=StackRequest(template=template, files=files or {}, environment=environment or {}))
    return made.id


async def _update(api: Runtime, stack_id: uuid.UUID, template: dict[str, object], *,
                  files: dict[str, str]) -> None:
    await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, stack_id),
                                  stack_request=StackRequest(template=template, files=files),
                                  registry=default_registry())


async def _delete(api: Runtime, stack_id: uuid.UUID) -> None:
    await operations.delete_stack(api.pool, api.bus, await stack_row(api.pool, stack_id))


async def _child_of(api: Runtime, stack_id: uuid.UUID, name: str = "res") -> uuid.UUID:
    row = (await resource_rows(api.pool, stack_id))[name]
    assert row.physical_id is not None
    return uuid.UUID(row.physical_id)


async def _under_way(api: Runtime, stack_id: uuid.UUID, name: str, action: str) -> None:
    async def probe() -> bool:
        row = (await resource_rows(api.pool, stack_id)).get(name)
        return row is not None and (row.action, row.status) == (action, "IN_PROGRESS")
    await eventually(probe, timeout=30, what=f"{name} {action}_IN_PROGRESS")


async def _events(api: Runtime, stack_id: uuid.UUID, *, since: str | None = None
                  ) -> list[tuple[str, str, str]]:
    """The stack's events as (resource, status, reason), from the first whose reason is ``since``."""
    lines = await event_lines(api.pool, stack_id)
    if since is not None:
        lines = lines[next(i for i, (_, _, reason) in enumerate(lines) if reason == since):]
    return lines


async def test_a_failed_provider_template_resource_is_deleted(settings: Settings) -> None:
    async with engine(settings) as api:
        stack_id = await _create(api, "dl-prov", hot({"res": {"type": "foo.yaml"}}),
                                 files={"foo.yaml": FAILING})
        await settled(api.pool, stack_id, status="CREATE_FAILED", timeout=60)
        child = await _child_of(api, stack_id)
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        assert (await stack_row(api.pool, child)).stack_status == "DELETE_COMPLETE"
        # Recorded from Heat 27.0.1.
        assert await _events(api, stack_id, since="Stack DELETE started") == [
            ("dl-prov", "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("res", "DELETE_IN_PROGRESS", "state changed"),
            ("res", "DELETE_COMPLETE", "state changed"),
            ("dl-prov", "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]


async def _failed_group_is_deleted(settings: Settings, name: str, member_type: str,
                                   environment: dict[str, object]) -> None:
    template = hot({"group": {"type": "OS::Heat::ResourceGroup",
                              "properties": {"count": 2, "resource_def": {"type": member_type}}}})
    async with engine(settings) as api:
        stack_id = await _create(api, name, template, files={"fail.yaml": FAILING}, environment=environment)
        await settled(api.pool, stack_id, status="CREATE_FAILED", timeout=60)
        members = await _child_of(api, stack_id, "group")
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        assert (await stack_row(api.pool, members)).stack_status == "DELETE_COMPLETE"
        # Recorded from Heat 27.0.1 (the same for both ways of naming the member type).
        assert await _events(api, stack_id, since="Stack DELETE started") == [
            (name, "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("group", "DELETE_IN_PROGRESS", "state changed"),
            ("group", "DELETE_COMPLETE", "state changed"),
            (name, "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]


async def test_a_failed_group_of_registry_mapped_templates_is_deleted(settings: Settings) -> None:
    await _failed_group_is_deleted(settings, "dl-group-reg", "My::Fail",
                                   {"resource_registry": {"My::Fail": "fail.yaml"}})


async def test_a_failed_group_of_template_files_is_deleted(settings: Settings) -> None:
    await _failed_group_is_deleted(settings, "dl-group-file", "fail.yaml", {})


async def test_a_delete_cancels_a_nested_update_under_way(settings: Settings) -> None:
    files = {"child.yaml": SLOW_CHILD}
    async with engine(settings) as api:
        stack_id = await _create(api, "dl-mid", _slow_parent("one"), files=files)
        await settled(api.pool, stack_id, status="CREATE_COMPLETE", timeout=60)
        child = await _child_of(api, stack_id)
        await _update(api, stack_id, _slow_parent("two", LONG), files=files)
        await _under_way(api, child, "inner", "UPDATE")
        began = time.monotonic()
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        assert time.monotonic() - began < 30
        assert (await stack_row(api.pool, child)).stack_status == "DELETE_COMPLETE"
        # Recorded from Heat 27.0.1: the update is cancelled, what it had under way is
        # aborted, then deleted; in the parent and in the nested stack alike.
        assert await _events(api, stack_id, since="Stack UPDATE started") == [
            ("dl-mid", "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("res", "UPDATE_IN_PROGRESS", "state changed"),
            ("dl-mid", "UPDATE_FAILED", "Stack UPDATE cancelled"),
            ("dl-mid", "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("res", "UPDATE_FAILED", "UPDATE aborted (user triggered cancel)"),
            ("res", "DELETE_IN_PROGRESS", "state changed"),
            ("res", "DELETE_COMPLETE", "state changed"),
            ("dl-mid", "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]
        nested = (await stack_row(api.pool, child)).name
        assert await _events(api, child, since="Stack UPDATE started") == [
            (nested, "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("inner", "UPDATE_IN_PROGRESS", "state changed"),
            (nested, "UPDATE_FAILED", "Stack UPDATE cancelled"),
            (nested, "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("inner", "UPDATE_FAILED", "UPDATE aborted (user triggered cancel)"),
            ("inner", "DELETE_IN_PROGRESS", "state changed"),
            ("inner", "DELETE_COMPLETE", "state changed"),
            (nested, "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]


async def test_a_delete_cancels_a_create_under_way(settings: Settings) -> None:
    template = hot({"slow": {"type": "OS::Heat::TestResource",
                             "properties": {"action_wait_secs": {"create": LONG}}},
                    "after": {"type": "OS::Heat::TestResource", "depends_on": "slow"}})
    async with engine(settings) as api:
        stack_id = await _create(api, "dl-create", template)
        await _under_way(api, stack_id, "slow", "CREATE")
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        # Recorded from Heat 27.0.1 ("after" was never made: it has no events).
        assert await _events(api, stack_id) == [
            ("dl-create", "CREATE_IN_PROGRESS", "Stack CREATE started"),
            ("slow", "CREATE_IN_PROGRESS", "state changed"),
            ("dl-create", "CREATE_FAILED", "Stack CREATE cancelled"),
            ("dl-create", "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("slow", "CREATE_FAILED", "CREATE aborted (user triggered cancel)"),
            ("slow", "DELETE_IN_PROGRESS", "state changed"),
            ("slow", "DELETE_COMPLETE", "state changed"),
            ("dl-create", "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]


async def test_a_second_delete_restarts_a_delete_under_way(settings: Settings) -> None:
    template = hot({"slow": {"type": "OS::Heat::TestResource",
                             "properties": {"action_wait_secs": {"delete": 3}}}})
    async with engine(settings) as api:
        stack_id = await _create(api, "dl-twice", template)
        await settled(api.pool, stack_id, status="CREATE_COMPLETE", timeout=30)
        await _delete(api, stack_id)
        await _under_way(api, stack_id, "slow", "DELETE")
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        # Recorded from Heat 27.0.1.
        assert await _events(api, stack_id, since="Stack DELETE started") == [
            ("dl-twice", "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("slow", "DELETE_IN_PROGRESS", "state changed"),
            ("dl-twice", "DELETE_FAILED", "Stack DELETE cancelled"),
            ("dl-twice", "DELETE_IN_PROGRESS", "Stack DELETE started"),
            ("slow", "DELETE_FAILED", "DELETE aborted (user triggered cancel)"),
            ("slow", "DELETE_IN_PROGRESS", "state changed"),
            ("slow", "DELETE_COMPLETE", "state changed"),
            ("dl-twice", "DELETE_COMPLETE", "Stack DELETE completed successfully"),
        ]


async def test_a_newer_update_preempts_a_nested_update_under_way(settings: Settings) -> None:
    files = {"child.yaml": SLOW_CHILD}
    async with engine(settings) as api:
        stack_id = await _create(api, "up-preempt", _slow_parent("one"), files=files)
        await settled(api.pool, stack_id, status="CREATE_COMPLETE", timeout=60)
        child = await _child_of(api, stack_id)
        await _update(api, stack_id, _slow_parent("two", LONG), files=files)
        await _under_way(api, child, "inner", "UPDATE")
        await _update(api, stack_id, _slow_parent("three"), files=files)
        nested = (await stack_row(api.pool, child)).name

        # The nested update is cancelled and a new one started at once, not after LONG seconds.
        # Recorded from Heat 27.0.1, up to where its nested resource's older update still runs.
        async def preempted() -> bool:
            return len(await event_lines(api.pool, child)) >= 8
        await eventually(preempted, timeout=15, what="the nested update to be preempted")
        assert await _events(api, stack_id, since="Stack UPDATE started") == [
            ("up-preempt", "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("res", "UPDATE_IN_PROGRESS", "state changed"),
            ("up-preempt", "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("res", "UPDATE_FAILED", "resources.res: Stack UPDATE cancelled"),
            ("up-preempt", "UPDATE_FAILED", "Resource UPDATE failed: resources.res: Stack UPDATE cancelled"),
            ("res", "UPDATE_IN_PROGRESS", "state changed"),
        ]
        assert await _events(api, child, since="Stack UPDATE started") == [
            (nested, "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("inner", "UPDATE_IN_PROGRESS", "state changed"),
            (nested, "UPDATE_FAILED", "Stack UPDATE cancelled"),
            (nested, "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
        ]
        assert (await stack_row(api.pool, stack_id)).stack_status == "UPDATE_IN_PROGRESS"
        assert (await resource_rows(api.pool, stack_id))["res"].physical_id == str(child)  # in place

        # And a delete ends it all without waiting either.
        await _delete(api, stack_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)


async def test_a_preempted_nested_update_ends_as_in_heat(settings: Settings) -> None:
    files = {"child.yaml": SLOW_CHILD}
    async with engine(settings) as api:
        stack_id = await _create(api, "up-end", _slow_parent("one"), files=files)
        await settled(api.pool, stack_id, status="CREATE_COMPLETE", timeout=60)
        child = await _child_of(api, stack_id)
        await _update(api, stack_id, _slow_parent("two", 4), files=files)
        await _under_way(api, child, "inner", "UPDATE")
        await _update(api, stack_id, _slow_parent("three"), files=files)
        await settled(api.pool, stack_id, status="UPDATE_COMPLETE", timeout=60)
        nested = (await stack_row(api.pool, child)).name
        # Recorded from Heat 27.0.1 (there with 8 s for the older update of "inner"): the
        # nested resource's older update finishes, then the newer one runs.
        assert await _events(api, stack_id, since="Stack UPDATE started") == [
            ("up-end", "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("res", "UPDATE_IN_PROGRESS", "state changed"),
            ("up-end", "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("res", "UPDATE_FAILED", "resources.res: Stack UPDATE cancelled"),
            ("up-end", "UPDATE_FAILED", "Resource UPDATE failed: resources.res: Stack UPDATE cancelled"),
            ("res", "UPDATE_IN_PROGRESS", "state changed"),
            ("res", "UPDATE_COMPLETE", "state changed"),
            ("up-end", "UPDATE_COMPLETE", "Stack UPDATE completed successfully"),
        ]
        assert await _events(api, child, since="Stack UPDATE started") == [
            (nested, "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("inner", "UPDATE_IN_PROGRESS", "state changed"),
            (nested, "UPDATE_FAILED", "Stack UPDATE cancelled"),
            (nested, "UPDATE_IN_PROGRESS", "Stack UPDATE started"),
            ("inner", "UPDATE_COMPLETE", "state changed"),
            ("inner", "UPDATE_IN_PROGRESS", "state changed"),
            ("inner", "UPDATE_COMPLETE", "state changed"),
            (nested, "UPDATE_COMPLETE", "Stack UPDATE completed successfully"),
        ]
        res = (await resource_rows(api.pool, stack_id))["res"]
        assert res.physical_id == str(child) and res.attributes["said"] == "three"


@pytest.mark.slow_ci  # about 16 s of backoff before it gives up
async def test_a_step_that_fails_the_same_way_every_time_fails_its_resource(settings: Settings) -> None:
    # A type no plugin implements (the api refuses it; a stack stored without that check, or
    # made before a plugin went away, has one): every try fails alike, so none is tried for ever.
    template = hot({"x": {"type": "Gone::Type"}, "y": {"type": "OS::Heat::None", "depends_on": "x"}})
    async with engine(settings) as api:
        made = await operations.create_stack(api.pool, api.bus, project="demo", name="gone",
                                             stack_request=StackRequest(template=template))
        done = await settled(api.pool, made.id, status="CREATE_FAILED", timeout=30)
        reason = "ResourceTypeNotFound: resources.x: The Resource Type (Gone::Type) could not be found."
        assert done.status_reason == f"Resource CREATE failed: {reason}"
        assert ("x", "CREATE_FAILED", reason) in await event_lines(api.pool, made.id)
        await _delete(api, made.id)
        done = await settled(api.pool, made.id, timeout=30)
        assert done.stack_status == "DELETE_FAILED"
        assert done.status_reason == f"Resource DELETE failed: {reason}"


async def test_an_update_request_planned_late_does_not_undo_a_delete(settings: Settings) -> None:
    # Plan requests of one stack may be planned out of order (redelivered, several planners):
    # the stack's newest desired state stands, an older request is not planned over it.
    template = hot({"slow": {"type": "OS::Heat::TestResource",
                             "properties": {"action_wait_secs": {"delete": 2}}}})
    async with engine(settings) as api:
        stack_id = await _create(api, "dl-late", template)
        await settled(api.pool, stack_id, status="CREATE_COMPLETE", timeout=30)
        await _delete(api, stack_id)
        await _under_way(api, stack_id, "slow", "DELETE")
        late = PlanRequest(project="demo", stack_id=str(stack_id), reason="update", action="UPDATE")
        await api.bus.publish(api.names.plan("demo", str(stack_id)), late, msg_id=late.msg_id)
        await settled(api.pool, stack_id, status="DELETE_COMPLETE", timeout=30)
        async with api.pool.acquire() as conn:
            assert await traversals.by_request(conn, stack_id, late.request_id) is None


async def test_a_rollback_during_a_create_under_way_deletes_it_before_what_it_needs(
        settings: Settings) -> None:
    # Heat records what a resource needs when its create starts: a rollback that begins while
    # ``slow``'s create is under way deletes it (once that create ends) before ``base``, which it needs.
    template = hot({
        "base": {"type": "OS::Heat::TestResource"},
        "slow": {"type": "OS::Heat::TestResource",
                 "properties": {"value": {"get_attr": ["base", "output"]},
                                "action_wait_secs": {"create": 3}}},
        "bad": {"type": "OS::Heat::TestResource", "depends_on": "base", "properties": {"fail": True}}})
    async with engine(settings) as api:
        made = await operations.create_stack(
            api.pool, api.bus, project="demo", name="dl-takeover", registry=default_registry(),
            stack_request=StackRequest(template=template), options=operations.Options(disable_rollback=False))
        await _under_way(api, made.id, "slow", "CREATE")
        rows = await resource_rows(api.pool, made.id)
        assert rows["slow"].requires == [rows["base"].id]
        await settled(api.pool, made.id, status="ROLLBACK_COMPLETE", timeout=60)
        lines = await _events(api, made.id, since="Stack ROLLBACK started")
        slow_gone = lines.index(("slow", "DELETE_COMPLETE", "state changed"))
        base_going = lines.index(("base", "DELETE_IN_PROGRESS", "state changed"))
        assert slow_gone < base_going, lines
