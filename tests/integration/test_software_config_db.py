"""The software config and deployment rows, against the real server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import asyncpg
import pytest

from libs.db import software_configs, software_deployments
from libs.db.pool import create_pool


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[asyncpg.Pool]:
    async with create_pool(database_url, min_size=1, max_size=2) as created:
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
        assert [c.name for c in first + rest] == ["zz", "aa", "mm"]  # oldest first
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
