"""A finished traversal's nodes are deleted by the planner's sweep; a late redelivery of one of
them is acknowledged and does nothing, and what the stack shows is unchanged."""

from __future__ import annotations

import uuid

import asyncpg

from libs import operations
from libs.config import Settings
from libs.db import dead_letters, traversals
from libs.engine import plan
from libs.messaging.payloads import WorkItem
from libs.resources.registry import default_registry
from libs.template.request import StackRequest
from services.planner import node_sweep
from tests.integration.engine_support import engine, event_lines, hot, resource_rows, settled, stack_row
from tests.support import eventually


async def _nodes_left(pool: asyncpg.Pool, traversal_id: uuid.UUID) -> int:
    async with pool.acquire() as conn:
        return int(await conn.fetchval("SELECT count(*) FROM traversal_nodes WHERE traversal_id = $1",
                                       traversal_id))


async def test_a_finished_traversals_nodes_are_swept_and_a_late_redelivery_does_nothing(
        settings: Settings) -> None:
    template = hot({f"r{i}": {"type": "OS::Heat::None"} for i in range(3)})
    async with engine(settings) as api:
        made = await operations.create_stack(
            api.pool, api.bus, project="demo", name="swept", registry=default_registry(),
            stack_request=StackRequest(template=template))
        await settled(api.pool, made.id, status="CREATE_COMPLETE")
        trav = (await stack_row(api.pool, made.id)).current_traversal
        assert trav is not None
        node = plan.update_node((await resource_rows(api.pool, made.id))["r0"].id)
        assert await _nodes_left(api.pool, trav) == 3  # kept a while after the traversal finished
        # Swept now rather than once the planner's sweep finds it old enough.
        while await node_sweep.sweep_once(api, older_than=0):
            pass
        assert await _nodes_left(api.pool, trav) == 0
        async with api.pool.acquire() as conn:
            assert await conn.fetchval("SELECT nodes_forgotten FROM traversals WHERE id = $1", trav)
            row = await traversals.get(conn, trav)
        assert row is not None and row.finished_at is not None

        events_before = await event_lines(api.pool, made.id)
        item = WorkItem(stack_id=str(made.id), traversal_id=str(trav), node=node)
        # A new message id: JetStream would drop the first one's copy, not deliver it again.
        await api.bus.publish(api.names.work(str(made.id)), item, msg_id=f"late-{uuid.uuid4()}")

        async def consumed() -> bool | None:
            backlog = await api.bus.backlog(api.names.workers)
            return True if backlog.pending == 0 and backlog.unacked == 0 else None
        await eventually(consumed, timeout=30, what="the late work item acknowledged")
        async with api.pool.acquire() as conn:
            assert await dead_letters.listing(conn) == []
        assert await event_lines(api.pool, made.id) == events_before
        assert (await stack_row(api.pool, made.id)).stack_status == "CREATE_COMPLETE"
