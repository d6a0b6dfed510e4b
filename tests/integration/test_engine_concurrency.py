"""Overlapping operations: no stack lock, the last desired state wins, nothing done twice."""

from __future__ import annotations

import collections
from typing import Any

from libs import operations
from libs.config import Settings
from libs.db import resources
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually


def _slow(value: str, n: int = 4, secs: float = 2) -> dict[str, object]:
    return hot({f"r{i}": {"type": "OS::Heat::TestResource",
                          "properties": {"value": value, "action_wait_secs": {"create": secs}}}
                for i in range(n)})



async def test_two_updates_during_a_long_create_end_at_the_last_template(settings: Settings) -> None:
    async with engine(settings, workers=2) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="overlap",
                                                stack_request=StackRequest(template=_slow("v1")))

        async def creating() -> bool:
            rows = await resource_rows(api.pool, created.id)
            return sum(r.status == "IN_PROGRESS" for r in rows.values()) == 4
        await eventually(creating, what="the create under way")
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=_slow("v2")))
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=_slow("v3")))
        done = await settled(api.pool, created.id, status="UPDATE_COMPLETE", timeout=60)
        assert done.status_reason == "Stack UPDATE completed successfully"
        rows = await resource_rows(api.pool, created.id)
        assert {n: r.properties["value"] for n, r in rows.items() if r.properties} == dict.fromkeys(
            ["r0", "r1", "r2", "r3"], "v3")
        lines = await event_lines(api.pool, created.id)
        created_once = collections.Counter(n for n, s, _ in lines if s == "CREATE_COMPLETE")
        assert created_once == dict.fromkeys(["r0", "r1", "r2", "r3"], 1)
        assert all(r.action == "UPDATE" for r in rows.values())


async def test_delete_during_create(settings: Settings) -> None:
    async with engine(settings, workers=2) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="early",
                                                stack_request=StackRequest(template=_slow("v1")))

        async def creating() -> bool:
            rows = await resource_rows(api.pool, created.id)
            return any(r.status == "IN_PROGRESS" for r in rows.values())
        await eventually(creating, what="the create under way")
        await operations.delete_stack(api.pool, api.bus, await stack_row(api.pool, created.id))
        done = await settled(api.pool, created.id, status="DELETE_COMPLETE", timeout=60)
        assert done.deleted_at is not None
        assert await resource_rows(api.pool, created.id) == {}


async def test_failed_create_rolls_back_when_rollback_is_enabled(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot({"ok": {"type": "OS::Heat::TestResource"},
                        "bad": {"type": "OS::Heat::TestResource", "properties": {"fail": True},
                                "depends_on": ["ok"]}})
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="rb", stack_request=StackRequest(template=template),
            options=operations.Options(disable_rollback=False))
        done = await settled(api.pool, created.id, status="ROLLBACK_COMPLETE", timeout=30)
        assert done.status_reason == "Stack ROLLBACK completed successfully"
        assert await resource_rows(api.pool, created.id) == {}
        statuses = [s for n, s, _ in await event_lines(api.pool, created.id) if n == "rb"]
        assert statuses == ["CREATE_IN_PROGRESS", "CREATE_FAILED", "ROLLBACK_IN_PROGRESS",
                            "ROLLBACK_COMPLETE"]


async def test_a_rollback_goes_back_to_the_resource_a_completed_replacement_replaced(
        settings: Settings) -> None:
    # Heat's best existing resource: the replaced one is still there, so the rollback keeps it
    # (the same physical id) and deletes its replacement, rather than replacing it once more.
    async with engine(settings) as api:
        def stack(value: str, fail: bool) -> dict[str, Any]:
            return hot({"a": {"type": "OS::Heat::TestResource",
                              "properties": {"value": value, "update_replace": True}},
                        "b": {"type": "OS::Heat::TestResource", "properties": {"fail": fail},
                              "depends_on": ["a"]}})
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="back",
            stack_request=StackRequest(template=stack("one", False)))
        await settled(api.pool, created.id, status="CREATE_COMPLETE", timeout=30)
        first = (await resource_rows(api.pool, created.id))["a"].physical_id
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=stack("two", True)),
                                      options=operations.Options(disable_rollback=False))
        done = await settled(api.pool, created.id, status="ROLLBACK_COMPLETE", timeout=30)
        assert done.status_reason == "Stack ROLLBACK completed successfully"
        rows = await resource_rows(api.pool, created.id)
        assert rows["a"].physical_id == first
        assert (rows["a"].properties or {}).get("value") == "one"
        lines = await event_lines(api.pool, created.id)
        # The replacement was made (and its update went through) before b failed.
        assert ("a", "CREATE_COMPLETE") in {(n, s) for n, s, _ in lines}
        async with api.pool.acquire() as conn:
            left = [r.physical_id for r in await resources.for_stack(conn, created.id) if r.name == "a"]
        assert left == [first]  # the replacement is gone
