"""A process that dies between its commit and its publish, or between two writes of one step.

Each window is set up exactly as the dead process left it (the same operations,
stopped where the crash stops them), so the recovery is shown every run rather
than when a ``kill -9`` happens to land there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import uuid
from collections.abc import AsyncIterator

import asyncpg
import yaml

from libs import operations
from libs.config import Settings
from libs.db import plan_outbox, resources, stacks, traversals
from libs.messaging.bus import Bus
from libs.resources.registry import default_registry
from libs.runtime import open_runtime
from libs.template.request import StackRequest
from services.worker import children, rows
from services.worker.main import body as worker_body
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually


@contextlib.asynccontextmanager
async def dead_bus(settings: Settings) -> AsyncIterator[Bus]:
    """A real NATS connection, closed: every publish on it fails as it would in a dying process."""
    async with open_runtime(settings, "api") as gone:
        bus = gone.bus
    yield bus


async def _pending(pool: asyncpg.Pool) -> int:
    async with pool.acquire() as conn:
        return await plan_outbox.pending(conn)


async def test_a_create_whose_plan_request_was_never_published_still_runs(settings: Settings) -> None:
    quick = dataclasses.replace(settings, plan_sweep_seconds=0.2)
    template = hot({"a": {"type": "OS::Heat::TestResource", "properties": {"value": "x"}},
                    "b": {"type": "OS::Heat::TestResource",
                          "properties": {"value": {"get_attr": ["a", "output"]}}}})
    async with dead_bus(quick) as bus, engine(quick) as api:
        # The create is committed; its publish fails. The caller is still told it was accepted.
        created = await operations.create_stack(api.pool, bus, project="demo", name="late",
                                                stack_request=StackRequest(template=template))
        assert await _pending(api.pool) == 1
        done = await settled(api.pool, created.id, timeout=60)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert {r.name: r.status for r in (await resource_rows(api.pool, created.id)).values()} == {
            "a": "COMPLETE", "b": "COMPLETE"}
        assert await _pending(api.pool) == 0
        async with api.pool.acquire() as conn:
            planned = await conn.fetchval("SELECT count(*) FROM traversals WHERE stack_id = $1", created.id)
        assert planned == 1


async def test_only_the_newest_lost_request_of_a_stack_is_planned(settings: Settings) -> None:
    quick = dataclasses.replace(settings, plan_sweep_seconds=0.2)
    template = hot({"a": {"type": "OS::Heat::TestResource", "properties": {"value": "x"}}})
    async with dead_bus(quick) as bus, engine(quick) as api:
        created = await operations.create_stack(api.pool, bus, project="demo", name="brief",
                                                stack_request=StackRequest(template=template))
        # Deleted before anything was planned, with the bus still down: no create then delete.
        await operations.delete_stack(api.pool, bus, await stack_row(api.pool, created.id))
        assert await _pending(api.pool) == 1
        done = await settled(api.pool, created.id, timeout=60)
        assert done.stack_status == "DELETE_COMPLETE", done.status_reason
        lines = await event_lines(api.pool, created.id)
        assert [(n, s) for n, s, _ in lines] == [("brief", "DELETE_IN_PROGRESS"),
                                                 ("brief", "DELETE_COMPLETE")]
        assert await _pending(api.pool) == 0


async def test_a_nested_stack_made_by_a_step_that_died_before_recording_it(settings: Settings) -> None:
    """The step made the child and died before writing its id: the next step adopts that child."""
    child_template = yaml.safe_dump({
        "heat_template_version": "2016-10-14",
        "resources": {"inner": {"type": "OS::Heat::TestResource", "properties": {"value": "deep"}}},
        "outputs": {"said": {"value": {"get_attr": ["inner", "output"]}}}})
    template = hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": child_template}}},
                   outputs={"heard": {"value": {"get_attr": ["nest", "outputs", "said"]}}})
    registry = default_registry()
    # A planner, and workers only once the dead step's state is in place.
    async with engine(settings, workers=0) as api:
        parent = await operations.create_stack(api.pool, api.bus, project="demo", name="outer",
                                               stack_request=StackRequest(template=template),
                                               registry=registry)

        async def planned() -> uuid.UUID | None:
            return (await stack_row(api.pool, parent.id)).current_traversal
        traversal_id = await eventually(planned, timeout=30, what="the create planned")
        async with api.pool.acquire() as conn:
            trav = await traversals.get(conn, traversal_id)
            assert trav is not None
            row = (await resource_rows(api.pool, parent.id))["nest"]
            stack = await stacks.get(conn, parent.id)
            assert stack is not None
            # What the step wrote before it died: the action started...
            started = await resources.write(conn, row, action="CREATE", status="IN_PROGRESS",
                                            status_reason="state changed", traversal_id=trav.id)
            assert started is not None
        # ...and the child it made (the worker makes it with these same calls), never recorded.
        name = children.child_name(stack, started, rows.short_id(row.id))
        child = await operations.create_stack(
            api.pool, api.bus, project="demo", name=name,
            stack_request=StackRequest(template=child_template), parent=stack,
            options=operations.Options(disable_rollback=True), registry=registry)

        async with open_runtime(settings, "worker") as worker, worker_body(worker):
            done = await settled(api.pool, parent.id, timeout=60)
        assert done.stack_status == "CREATE_COMPLETE", done.status_reason
        assert done.outputs[0]["output_value"] == "deep"
        nest = (await resource_rows(api.pool, parent.id))["nest"]
        assert nest.physical_id == str(child.id)
        async with api.pool.acquire() as conn:
            assert list(await stacks.children(conn, parent.id)) == [child.id]  # no second child
        assert (await stack_row(api.pool, child.id)).stack_status == "CREATE_COMPLETE"



async def test_a_nested_update_whose_step_died_before_asking_the_child_still_runs(settings: Settings) -> None:
    """The step wrote the parent's update under way and died before asking the nested stack:
    the redelivered step asks it, instead of waiting for an update nobody asked for."""
    def child(value: str) -> str:
        return yaml.safe_dump({
            "heat_template_version": "2016-10-14",
            "resources": {"inner": {"type": "OS::Heat::TestResource", "properties": {"value": value}}},
            "outputs": {"said": {"value": {"get_attr": ["inner", "output"]}}}})

    def template(value: str) -> dict[str, object]:
        return hot({"nest": {"type": "OS::Heat::Stack", "properties": {"template": child(value)}}},
                   outputs={"heard": {"value": {"get_attr": ["nest", "outputs", "said"]}}})
    registry = default_registry()
    async with engine(settings, workers=0) as api:
        parent = await operations.create_stack(api.pool, api.bus, project="demo", name="outer",
                                               stack_request=StackRequest(template=template("deep")),
                                               registry=registry)
        async with open_runtime(settings, "worker") as worker, worker_body(worker):
            made = await settled(api.pool, parent.id, timeout=60)
        assert made.stack_status == "CREATE_COMPLETE", made.status_reason
        await operations.update_stack(api.pool, api.bus, made, registry=registry,
                                      stack_request=StackRequest(template=template("deeper")))

        async def planned() -> uuid.UUID | None:
            now = (await stack_row(api.pool, parent.id)).current_traversal
            return now if now != made.current_traversal else None
        traversal_id = await eventually(planned, timeout=30, what="the update planned")
        async with api.pool.acquire() as conn:
            row = (await resource_rows(api.pool, parent.id))["nest"]
            # What the step wrote before it died: the update started, the child never asked.
            started = await resources.write(conn, row, action="UPDATE", status="IN_PROGRESS",
                                            status_reason="state changed", traversal_id=traversal_id)
            assert started is not None

        async with open_runtime(settings, "worker") as worker, worker_body(worker):
            done = await settled(api.pool, parent.id, timeout=60)
        assert done.stack_status == "UPDATE_COMPLETE", done.status_reason
        assert done.outputs[0]["output_value"] == "deeper"
