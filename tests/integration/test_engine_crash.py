"""kill -9 of workers and of the planner mid-traversal: a short delay, nothing lost or done twice."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
from pathlib import Path

import pytest

from libs import operations
from libs.config import Settings
from libs.template.request import StackRequest
from tests.integration.engine_support import event_lines, hot, resource_rows, settled
from tests.support import ember, eventually, terminate

pytestmark = pytest.mark.slow


def _template(n: int) -> dict[str, object]:
    # A few chains of short waits, so kills land between and inside steps.
    res: dict[str, object] = {}
    for i in range(n):
        props: dict[str, object] = {"value": f"v{i}", "action_wait_secs": {"create": 0.5}}
        if i >= 4:
            props["value"] = {"get_attr": [f"r{i - 4}", "output"]}
        res[f"r{i}"] = {"type": "OS::Heat::TestResource", "properties": props}
    return hot(res)


async def test_kill_9_of_workers_and_planner_costs_only_a_delay(
        settings: Settings, ember_env: dict[str, str], tmp_path: Path) -> None:
    def start(service: str, n: int) -> subprocess.Popen[bytes]:
        return ember([service], ember_env, tmp_path / f"{service}-{n}.log")

    procs = {"planner": start("planner", 0), "worker-a": start("worker", 0), "worker-b": start("worker", 1)}
    from libs.runtime import open_runtime

    try:
        async with open_runtime(settings, "api") as api:
            created = await operations.create_stack(api.pool, api.bus, project="demo", name="crashy",
                                                    stack_request=StackRequest(template=_template(16)))

            async def some_done() -> bool:
                rows = await resource_rows(api.pool, created.id)
                return sum(r.status == "COMPLETE" and r.action == "CREATE" for r in rows.values()) >= 3
            await eventually(some_done, timeout=60, what="part of the create done")
            # Kill one worker and the planner hard, mid-traversal; start replacements.
            os.kill(procs["worker-a"].pid, signal.SIGKILL)
            os.kill(procs["planner"].pid, signal.SIGKILL)
            procs["worker-a"].wait()
            procs["planner"].wait()
            procs["worker-c"] = start("worker", 2)
            procs["planner-2"] = start("planner", 1)
            done = await settled(api.pool, created.id, timeout=120)
            assert done.stack_status == "CREATE_COMPLETE", done.status_reason
            rows = await resource_rows(api.pool, created.id)
            assert len(rows) == 16 and all(r.status == "COMPLETE" for r in rows.values())
            lines = await event_lines(api.pool, created.id)
            per_resource = collections.Counter((n, s) for n, s, _ in lines if n != "crashy")
            assert set(per_resource.values()) == {1}, "every resource started and completed exactly once"
            assert len(per_resource) == 32
            # And an update through a fresh planner still works after the crash.
            await operations.delete_stack(api.pool, api.bus, done)
            await settled(api.pool, created.id, status="DELETE_COMPLETE", timeout=60)
    finally:
        for name, proc in procs.items():
            if proc.poll() is None:
                assert terminate(proc) == 0, name
