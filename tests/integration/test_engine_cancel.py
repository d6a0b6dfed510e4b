"""Cancelling an update (with and without rollback) and a stack timeout."""

from __future__ import annotations

import uuid

import pytest

from libs import operations
from libs.config import Settings
from libs.runtime import Runtime
from libs.template import errors
from libs.template.request import StackRequest
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually


def _values(value: str, wait: float = 0) -> dict[str, object]:
    return hot({f"r{i}": {"type": "OS::Heat::TestResource",
                          "properties": {"value": value, "action_wait_secs": {"update": wait}}}
                for i in range(3)})


async def _updating(api: Runtime, stack_id: uuid.UUID) -> None:
    async def under_way() -> bool:
        rows = await resource_rows(api.pool, stack_id)
        return any(r.action == "UPDATE" and r.status == "IN_PROGRESS" for r in rows.values())
    await eventually(under_way, what="the update under way")


async def test_cancel_update_rolls_back_to_the_last_template(settings: Settings) -> None:
    async with engine(settings) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="cu",
                                                stack_request=StackRequest(template=_values("v1")))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=_values("v2", wait=3)))
        await _updating(api, created.id)
        current = await stack_row(api.pool, created.id)
        await operations.cancel_update(api.pool, api.bus, current, rollback=True)
        done = await settled(api.pool, created.id, status="ROLLBACK_COMPLETE", timeout=60)
        assert done.status_reason == "Stack ROLLBACK completed successfully"
        rows = await resource_rows(api.pool, created.id)
        assert {r.properties["value"] for r in rows.values() if r.properties} == {"v1"}


async def test_cancel_without_rollback_stops_where_it_is(settings: Settings) -> None:
    async with engine(settings) as api:
        created = await operations.create_stack(api.pool, api.bus, project="demo", name="cnr",
                                                stack_request=StackRequest(template=_values("v1")))
        await settled(api.pool, created.id, status="CREATE_COMPLETE")
        await operations.update_stack(api.pool, api.bus, await stack_row(api.pool, created.id),
                                      stack_request=StackRequest(template=_values("v2", wait=2)))
        await _updating(api, created.id)
        current = await stack_row(api.pool, created.id)
        await operations.cancel_update(api.pool, api.bus, current, rollback=False)
        done = await settled(api.pool, created.id, status="UPDATE_FAILED")
        assert done.status_reason == "Stack UPDATE cancelled"

        # The resource actions under way still complete normally.
        async def finished() -> bool:
            rows = await resource_rows(api.pool, created.id)
            return all(r.status != "IN_PROGRESS" for r in rows.values())
        await eventually(finished, timeout=30, what="in-flight updates to finish")
        assert ("cnr", "UPDATE_FAILED", "Stack UPDATE cancelled") in await event_lines(api.pool, created.id)
        with pytest.raises(errors.NotSupported, match="Cancelling update when stack is UPDATE_FAILED"):
            failed = await stack_row(api.pool, created.id)
            await operations.cancel_update(api.pool, api.bus, failed, rollback=True)


@pytest.mark.slow_ci  # a timeout is a whole minute at the least (timeout_mins)
async def test_a_stack_times_out(settings: Settings) -> None:
    async with engine(settings) as api:
        template = hot({"forever": {"type": "OS::Heat::TestResource", "properties": {"wait_secs": -1}}})
        created = await operations.create_stack(
            api.pool, api.bus, project="demo", name="slowpoke", stack_request=StackRequest(template=template),
            options=operations.Options(timeout_mins=1))
        done = await settled(api.pool, created.id, status="CREATE_FAILED", timeout=90)
        assert done.status_reason == "Timed out"

        async def abandoned() -> bool:
            rows = await resource_rows(api.pool, created.id)
            return rows["forever"].status == "FAILED"
        await eventually(abandoned, timeout=30, what="the endless create abandoned")
