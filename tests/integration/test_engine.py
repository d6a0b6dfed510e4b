"""The convergence engine end to end on real Postgres and JetStream (planner + workers)."""

from __future__ import annotations

import dataclasses

from libs import operations
from libs.config import Settings
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled
from tests.support import eventually


def _chain(n: int, **props: object) -> dict[str, object]:
    res: dict[str, object] = {}
    for i in range(n):
        p: dict[str, object] = {"value": f"v{i}", **props}
        if i:
            p["value"] = {"list_join": ["-", [f"v{i}", {"get_attr": [f"r{i - 1}", "output"]}]]}
        res[f"r{i}"] = {"type": "OS::Heat::TestResource", "properties": p}
    return res


async def test_create_runs_in_dependency_order_and_resolves_outputs(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot(_chain(3), outputs={"last": {"value": {"get_attr": ["r2", "output"]}}})
        row = await operations.create_stack(api.pool, api.bus, project="demo", name="chain",
                                            stack_request=StackRequest(template=template))
        done = await settled(api.pool, row.id)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert done.status_reason == "Stack CREATE completed successfully"
        assert done.outputs == [{"output_key": "last", "description": "No description given",
                                 "output_value": "v2-v1-v0"}]
        rows = await resource_rows(api.pool, row.id)
        assert {n: (r.action, r.status) for n, r in rows.items()} == dict.fromkeys(
            ["r0", "r1", "r2"], ("CREATE", "COMPLETE"))
        lines = await event_lines(api.pool, row.id)
        assert lines[0] == ("chain", "CREATE_IN_PROGRESS", "Stack CREATE started")
        assert lines[-1] == ("chain", "CREATE_COMPLETE", "Stack CREATE completed successfully")
        order = [n for n, s, _ in lines if s == "CREATE_COMPLETE" and n != "chain"]
        assert order == ["r0", "r1", "r2"]


async def test_update_in_place_replace_and_delete(settings: Settings) -> None:
    async with engine(settings) as api:
        v1 = hot({"keep": {"type": "OS::Heat::TestResource", "properties": {"value": "a"}},
                  "swap": {"type": "OS::Heat::TestResource", "properties": {"update_replace_value": "x"}},
                  "gone": {"type": "OS::Heat::None"}})
        row = await operations.create_stack(api.pool, api.bus, project="demo", name="upd",
                                            stack_request=StackRequest(template=v1))
        await settled(api.pool, row.id, status="CREATE_COMPLETE")
        before = await resource_rows(api.pool, row.id)
        v2 = hot({"keep": {"type": "OS::Heat::TestResource", "properties": {"value": "b"}},
                  "swap": {"type": "OS::Heat::TestResource", "properties": {"update_replace_value": "y"}},
                  "new": {"type": "OS::Heat::None"}})
        async with api.pool.acquire() as conn:
            from libs.db import stacks
            current = await stacks.get(conn, row.id)
        assert current is not None
        await operations.update_stack(api.pool, api.bus, current, stack_request=StackRequest(template=v2))
        done = await settled(api.pool, row.id, status="UPDATE_COMPLETE")
        after = await resource_rows(api.pool, row.id)
        assert set(after) == {"keep", "swap", "new"}
        assert after["keep"].id == before["keep"].id and after["keep"].action == "UPDATE"
        assert after["keep"].properties is not None and after["keep"].properties["value"] == "b"
        assert after["swap"].id != before["swap"].id  # replaced: a new row, the old one deleted
        assert after["swap"].physical_id != before["swap"].physical_id
        assert done.status_reason == "Stack UPDATE completed successfully"
        await operations.delete_stack(api.pool, api.bus, done)
        deleted = await settled(api.pool, row.id, status="DELETE_COMPLETE")
        assert deleted.deleted_at is not None
        assert await resource_rows(api.pool, row.id) == {}


async def test_failure_fails_the_stack_with_heats_reason(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot({"bad": {"type": "OS::Heat::TestResource", "properties": {"fail": True}},
                        "after": {"type": "OS::Heat::None", "depends_on": ["bad"]}})
        row = await operations.create_stack(api.pool, api.bus, project="demo", name="boom",
                                            stack_request=StackRequest(template=template))
        done = await settled(api.pool, row.id)
        assert done.stack_status == "CREATE_FAILED"
        assert done.status_reason.startswith("Resource CREATE failed: ")
        rows = await resource_rows(api.pool, row.id)
        assert (rows["bad"].action, rows["bad"].status) == ("CREATE", "FAILED")
        assert (rows["after"].action, rows["after"].status) == ("INIT", "COMPLETE")


async def test_waiting_resources_hold_no_worker(settings: Settings) -> None:
    # One worker handling one message at a time, ten resources that each take
    # seconds: all ten are under way at once, because a wait is a delayed
    # redelivery, not a worker sleeping.
    async with engine(dataclasses.replace(settings, worker_concurrency=1)) as api:
        template = hot({f"w{i}": {"type": "OS::Heat::TestResource", "properties": {"wait_secs": 3}}
                        for i in range(10)})
        row = await operations.create_stack(api.pool, api.bus, project="demo", name="waits",
                                            stack_request=StackRequest(template=template))

        async def all_in_progress() -> bool:
            rows = await resource_rows(api.pool, row.id)
            return sum(r.status == "IN_PROGRESS" for r in rows.values()) == 10
        await eventually(all_in_progress, timeout=20, what="ten resources in progress at once")
        done = await settled(api.pool, row.id, timeout=60)
        assert done.stack_status == "CREATE_COMPLETE"
