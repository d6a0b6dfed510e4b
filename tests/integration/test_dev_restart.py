"""Killing the whole of `ember dev` in the middle of a create: after a restart, it finishes."""

from __future__ import annotations

import asyncio
import collections
from pathlib import Path

import pytest

from libs import operations
from libs.config import load
from libs.db import events
from libs.embedded.process import free_port
from libs.runtime import open_runtime
from libs.template.request import StackRequest
from tests.integration.engine_support import hot, resource_rows, settled
from tests.support import ember, eventually, wait_all_gone, wait_until

pytestmark = pytest.mark.slow


def _env(data_dir: Path, port: int) -> dict[str, str]:
    return {"EMBER_DATA_DIR": str(data_dir), "EMBER_API_BIND": f"127.0.0.1:{port}",
            "EMBER_SHUTDOWN_GRACE": "3", "EMBER_REPORT_INTERVAL": "1"}


def _urls(data_dir: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in (data_dir / "dev.env").read_text().splitlines())


@pytest.mark.slow_ci  # about 35 s of a whole `ember dev` twice
async def test_the_whole_of_dev_restarted_during_a_create(data_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    first = ember(["dev"], _env(data_dir, port), tmp_path / "dev-1.log")
    def props(i: int) -> dict[str, object]:
        chained = {"update_replace_value": {"get_attr": [f"r{i - 1}", "output"]}} if i else {}
        return {"value": f"v{i}", "action_wait_secs": {"create": 2}, **chained}

    template = hot({f"r{i}": {"type": "OS::Heat::TestResource", "properties": props(i)} for i in range(6)})
    try:
        await asyncio.to_thread(wait_until, (data_dir / "dev.env").exists, timeout=90, what="dev up")
        settings = load({**_urls(data_dir), "EMBER_NATS_PREFIX": "ember"})
        async with open_runtime(settings, "api") as api:
            created = await operations.create_stack(api.pool, api.bus, project="demo", name="survivor",
                                                    stack_request=StackRequest(template=template))

            async def under_way() -> bool:
                rows = await resource_rows(api.pool, created.id)
                return any(r.status == "COMPLETE" and r.action == "CREATE" for r in rows.values())
            await eventually(under_way, timeout=60, what="the create under way")
    finally:
        first.kill()  # the whole of dev, without warning: its children die with it
        first.wait()
    await asyncio.to_thread(wait_all_gone, str(data_dir), timeout=30,
                            what="every process of the first run gone")

    (data_dir / "dev.env").unlink()  # the old run's ports; the new run writes its own
    second = ember(["dev"], _env(data_dir, port), tmp_path / "dev-2.log")
    try:
        await asyncio.to_thread(wait_until, (data_dir / "dev.env").exists, timeout=90, what="dev up again")
        settings = load({**_urls(data_dir), "EMBER_NATS_PREFIX": "ember"})
        async with open_runtime(settings, "api") as api:
            done = await settled(api.pool, created.id, timeout=120)
            assert done.stack_status == "CREATE_COMPLETE", done.status_reason
            async with api.pool.acquire() as conn:
                rows = await events.for_stack(conn, created.id)
            lines = [(e.resource_name, e.resource_status) for e in rows]
            per_resource = collections.Counter(line for line in lines if line[0] != "survivor")
            assert set(per_resource.values()) == {1}, per_resource  # no step done twice, no event lost
            assert len(per_resource) == 12
    finally:
        second.terminate()
        second.wait(60)
