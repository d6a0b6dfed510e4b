"""The software config and deployment rows, against the real server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from libs.db import software_configs, software_deployments
from libs.db.pool import create_pool
from tests.support import eventually


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with create_pool(database_url, min_size=1, max_size=3) as created:
        yield created


CONFIG = {"config": "#!/bin/sh\necho hi", "inputs": [], "outputs": [], "options": {}}


async def test_a_config_in_use_is_kept_and_an_insert_run_again_stores_nothing(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        fixed = uuid.uuid4()
        made = await software_configs.insert(conn, project="p", name="c", group="script", config=CONFIG,
                                             config_id=fixed)
        again = await software_configs.insert(conn, project="p", name="other", group="x", config={},
                                              config_id=fixed)
        assert again == made  # the first one stands
        assert await software_configs.get(conn, fixed, "q") is None  # another project's
        deployed = await software_deployments.insert(conn, project="p", config_id=fixed, server_id="s1",
                                                      input_values={"a": 1}, action="CREATE",
                                                      status="IN_PROGRESS")
        assert await software_configs.in_use(conn, fixed)
        assert not await software_configs.delete(conn, fixed)
        assert await software_deployments.delete(conn, deployed.id) == deployed
        assert await software_configs.delete(conn, fixed)
        assert await software_configs.get(conn, fixed) is None


async def test_pages_of_configs_and_a_servers_deployments_by_config_name(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        made = [await software_configs.insert(conn, project="p", name=n, group="script", config=CONFIG)
                for n in ("zz", "aa", "mm")]
        await software_configs.insert(conn, project="q", name="theirs", group="script", config=CONFIG)
        first = await software_configs.page(conn, "p", limit=2, marker=None)
        rest = await software_configs.page(conn, "p", limit=2, marker=first[-1].id)
        assert [c.name for c in first + rest] == ["mm", "aa", "zz"]  # newest first, as Heat lists them
        # A marker that names no config is no marker (Heat's paging).
        assert await software_configs.page(conn, "p", limit=1, marker=uuid.uuid4()) == first[:1]
        assert len(await software_configs.page(conn, None, limit=None, marker=None)) == 4
        for config in made:
            await software_deployments.insert(conn, project="p", config_id=config.id, server_id="s1",
                                              input_values={}, action="CREATE", status="IN_PROGRESS")
        pairs = await software_deployments.configs_of_server(conn, "s1")
        assert [c.name for _, c in pairs] == ["aa", "mm", "zz"]
        assert [d.config_id for d, _ in pairs] == [made[1].id, made[2].id, made[0].id]
        assert pairs[0][0] == await software_deployments.get(conn, pairs[0][0].id)
        assert pairs[0][1] == await software_configs.get(conn, made[1].id)


async def test_an_update_expecting_a_status_changes_nothing_once_it_moved_on(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        config = await software_configs.insert(conn, project="p", name="c", group="script", config=CONFIG)
        deployed = await software_deployments.insert(conn, project="p", config_id=config.id, server_id="s",
                                                      input_values={}, action="CREATE", status="IN_PROGRESS")
        done = await software_deployments.update(conn, deployed.id, expect_status="IN_PROGRESS",
                                                 status="COMPLETE", output_values={"deploy_status_code": 0})
        assert done is not None
        assert (done.status, done.output_values) == ("COMPLETE", {"deploy_status_code": 0})
        assert done.updated_at is not None
        assert await software_deployments.update(conn, deployed.id, expect_status="IN_PROGRESS",
                                                 status="FAILED") is None
        with pytest.raises(ValueError, match="not a deployment column"):
            await software_deployments.update(conn, deployed.id, server_id="elsewhere")


async def test_what_a_project_sees_of_deployments_made_for_its_stack_user_project(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        config = await software_configs.insert(conn, project="p", name="c", group="script", config=CONFIG)
        for server, user_project in (("s1", "agents"), ("s1", ""), ("s2", "")):
            await software_deployments.insert(conn, project="p", config_id=config.id, server_id=server,
                                              input_values={}, action="CREATE", status="IN_PROGRESS",
                                              stack_user_project_id=user_project)
        assert len(await software_deployments.page(conn, "agents")) == 0
        assert len(await software_deployments.page(conn, "agents", with_stack_user=True)) == 1
        assert len(await software_deployments.page(conn, "p", server_id="s1", with_stack_user=True)) == 2
        assert (await software_deployments.count(conn, "p"), await software_deployments.count(conn, "agents"),
                await software_deployments.count(conn, "q")) == (3, 1, 0)
        assert len(await software_deployments.configs_of_server(conn, "s1", visible_to="agents")) == 1
        assert len(await software_deployments.configs_of_server(conn, "s1", visible_to="q")) == 0
        assert len(await software_deployments.configs_of_server(conn, "s1")) == 2


async def test_a_config_locked_for_a_new_deployment_is_not_deleted_under_it(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as setup:
        config = await software_configs.insert(setup, project="p", name="c", group="script", config=CONFIG)
    async with pool.acquire() as deploying, pool.acquire() as deleting, pool.acquire() as watching:
        transaction = deploying.transaction()
        await transaction.start()
        assert await software_configs.get(deploying, config.id, "p", lock=True) == config
        await software_deployments.insert(deploying, project="p", config_id=config.id, server_id="s",
                                          input_values={}, action="CREATE", status="IN_PROGRESS")
        # The delete does not see the uncommitted deployment, so it waits on the lock, then meets
        # the reference once the deployment is committed: the config is in use, not deleted.
        delete = asyncio.create_task(software_configs.delete(deleting, config.id))

        async def waiting_on_the_lock() -> bool:
            return await watching.fetchval("SELECT wait_event_type = 'Lock' FROM pg_stat_activity"
                                           " WHERE pid = $1", deleting.get_server_pid()) is True
        await eventually(waiting_on_the_lock, timeout=10, what="the delete to wait on the config's lock")
        assert not delete.done()
        await transaction.commit()
        assert await delete is False
        assert await software_configs.get(deleting, config.id) == config
