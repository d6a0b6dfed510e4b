"""kill -9 of workers and of the planner mid-traversal: a short delay, nothing lost or done twice."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from libs import operations, scaling, stack_snapshots
from libs.config import Settings
from libs.db import stacks as stack_rows
from libs.resources.registry import default_registry
from libs.runtime import open_runtime
from libs.template.request import StackRequest
from tests.integration.engine_support import event_lines, hot, resource_rows, settled, stack_row
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


@pytest.mark.slow_ci  # 13 s; test.sh keeps the kill -9 of workers and planner beside it
async def test_kill_9_of_a_worker_during_a_group_and_a_nested_stack(
        settings: Settings, ember_env: dict[str, str], tmp_path: Path) -> None:
    member = {"type": "OS::Heat::TestResource",
              "properties": {"value": "m", "action_wait_secs": {"create": 0.3}}}
    child = ("heat_template_version: 2016-10-14\nresources:\n"
             "  a: {type: OS::Heat::TestResource, properties: {action_wait_secs: {create: 0.3}}}\n"
             "  b: {type: OS::Heat::TestResource, properties: {action_wait_secs: {create: 0.3}}}\n")
    template = hot({"group": {"type": "OS::Heat::ResourceGroup",
                              "properties": {"count": 6, "resource_def": member}},
                    "nest": {"type": "OS::Heat::Stack", "properties": {"template": child}}},
                   outputs={"refs": {"value": {"get_attr": ["group", "refs"]}}})
    procs = {"planner": ember(["planner"], ember_env, tmp_path / "planner.log"),
             "worker-a": ember(["worker"], ember_env, tmp_path / "worker-a.log"),
             "worker-b": ember(["worker"], ember_env, tmp_path / "worker-b.log")}
    try:
        async with open_runtime(settings, "api") as api:
            created = await operations.create_stack(api.pool, api.bus, project="demo", name="deep",
                                                    stack_request=StackRequest(template=template),
                                                    registry=default_registry())

            async def children_started() -> bool:
                async with api.pool.acquire() as conn:
                    return len(await stack_rows.children(conn, created.id)) == 2
            await eventually(children_started, timeout=60, what="both nested stacks made")
            os.kill(procs["worker-a"].pid, signal.SIGKILL)
            procs["worker-a"].wait()
            procs["worker-c"] = ember(["worker"], ember_env, tmp_path / "worker-c.log")
            done = await settled(api.pool, created.id, timeout=120)
            assert done.stack_status == "CREATE_COMPLETE", done.status_reason
            assert len(done.outputs[0]["output_value"]) == 6
            async with api.pool.acquire() as conn:
                nested = await stack_rows.children(conn, created.id)
            assert len(nested) == 2  # no child made twice
            for child_id in nested:
                lines = await event_lines(api.pool, child_id)
                per_resource = collections.Counter((n, s) for n, s, _ in lines if not n.startswith("deep-"))
                assert set(per_resource.values()) == {1}, per_resource
    finally:
        for name, proc in procs.items():
            if proc.poll() is None:
                assert terminate(proc) == 0, name


@pytest.mark.slow_ci  # about 30 s; the other kill -9 tests run in ./test.sh
async def test_kill_9_during_a_rolling_update_a_scale_a_restore_and_an_adopt(
        settings: Settings, ember_env: dict[str, str], tmp_path: Path) -> None:
    """Each of issue 6's operations with a worker killed while it runs: it still ends as it should."""
    def member(value: str) -> dict[str, object]:
        return {"type": "OS::Heat::TestResource",
                "properties": {"value": value, "action_wait_secs": {"create": 0.2, "update": 0.2}}}

    def template(value: str) -> dict[str, object]:
        return hot({
            "rolling": {"type": "OS::Heat::ResourceGroup",
                        "properties": {"count": 4, "resource_def": member(value)},
                        "update_policy": {"rolling_update": {"max_batch_size": 1, "min_in_service": 3}}},
            "scaled": {"type": "OS::Heat::AutoScalingGroup",
                       "properties": {"min_size": 1, "max_size": 6, "desired_capacity": 2,
                                      "resource": member("s")}},
            "secret": {"type": "OS::Heat::RandomString"}},
            outputs={"values": {"value": {"get_attr": ["rolling", "attributes", "output"]}},
                     "size": {"value": {"get_attr": ["scaled", "current_size"]}},
                     "secret": {"value": {"get_attr": ["secret", "value"]}}})

    env = {**ember_env, "EMBER_ENABLE_STACK_ABANDON": "true", "EMBER_ENABLE_STACK_ADOPT": "true"}
    workers = _Workers(env, tmp_path)
    procs = workers.procs
    kill_one_worker = workers.kill_one
    registry = default_registry()
    try:
        async with open_runtime(settings, "api") as api:
            made = await operations.create_stack(api.pool, api.bus, project="demo", name="ops",
                                                 stack_request=StackRequest(template=template("a")),
                                                 registry=registry)
            first = await settled(api.pool, made.id, status="CREATE_COMPLETE", timeout=120)
            secret = next(o["output_value"] for o in first.outputs if o["output_key"] == "secret")
            snapshot = await stack_snapshots.take(api.pool, first, "before")

            # A rolling update, with a worker killed while batches run.
            await operations.update_stack(api.pool, api.bus, first, registry=registry,
                                          stack_request=StackRequest(template=template("b")))
            await eventually(lambda: _nested_update_running(api.pool, made.id, "rolling"), timeout=60,
                             what="the rolling update under way")
            await kill_one_worker()
            rolled = await settled(api.pool, made.id, status="UPDATE_COMPLETE", timeout=120)
            assert next(o["output_value"] for o in rolled.outputs if o["output_key"] == "values") == {
                str(i): "b" for i in range(4)}

            # A scale of the auto scaling group, with a worker killed while it grows.
            group = (await resource_rows(api.pool, made.id))["scaled"]
            capacity = await scaling.scale(api.pool, api.bus, registry, rolled, group=group,
                                           change=scaling.Adjustment("change_in_capacity", 3.0))
            assert capacity == 5
            await kill_one_worker()
            child_id = uuid.UUID(group.physical_id or "")
            grown = await settled(api.pool, child_id, status="UPDATE_COMPLETE", timeout=120)
            assert len(await resource_rows(api.pool, grown.id)) == 5

            # A restore to the snapshot, with a worker killed while it runs.
            await stack_snapshots.restore(api.pool, api.bus, await stack_row(api.pool, made.id), snapshot)
            await kill_one_worker()
            restored = await settled(api.pool, made.id, status="RESTORE_COMPLETE", timeout=120)
            assert next(o["output_value"] for o in restored.outputs if o["output_key"] == "values") == {
                str(i): "a" for i in range(4)}
            assert next(o["output_value"] for o in restored.outputs if o["output_key"] == "secret") == secret

            # Abandon, then adopt with a worker killed while it adopts: the same resources come back.
            before = {n: r.physical_id for n, r in (await resource_rows(api.pool, made.id)).items()}
            data = await stack_snapshots.abandon(api.pool, api.bus, restored)
            await settled(api.pool, made.id, status="DELETE_COMPLETE", timeout=120)
            adopted = await operations.create_stack(
                api.pool, api.bus, project="demo", name="ops-again", adopt_data=data,
                stack_request=StackRequest(template=data["template"], environment=data["environment"]),
                registry=registry)
            await kill_one_worker()
            back = await settled(api.pool, adopted.id, status="ADOPT_COMPLETE", timeout=120)
            after = {n: r.physical_id for n, r in (await resource_rows(api.pool, back.id)).items()}
            assert after["secret"] == before["secret"]
            assert next(o["output_value"] for o in back.outputs if o["output_key"] == "secret") == secret
    finally:
        for name, proc in procs.items():
            if proc.poll() is None:
                assert terminate(proc) == 0, name


class _Workers:
    """A planner and two workers; a killed worker is replaced at once."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env, self.logs = env, logs
        self.procs = {"planner": ember(["planner"], env, logs / "planner.log"),
                      "worker-0": ember(["worker"], env, logs / "worker-0.log"),
                      "worker-1": ember(["worker"], env, logs / "worker-1.log")}
        self.kills = 0

    async def kill_one(self) -> None:
        victim = self.procs[f"worker-{self.kills}"]
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        self.kills += 1
        log = self.logs / f"worker-{self.kills + 1}.log"
        self.procs[f"worker-{self.kills + 1}"] = ember(["worker"], self.env, log)

        async def ready() -> bool | None:  # so that a SIGTERM at the end finds it drained, not starting
            return (log.exists() and "worker ready" in log.read_text()) or None
        await eventually(ready, timeout=60, what="the replacement worker ready")


async def _nested_update_running(pool: Any, stack_id: uuid.UUID, resource: str) -> bool | None:
    row = (await resource_rows(pool, stack_id)).get(resource)
    if row is None or not row.physical_id:
        return None
    async with pool.acquire() as conn:
        child = await stack_rows.get(conn, uuid.UUID(row.physical_id))
    return (child is not None and child.stack_status == "UPDATE_IN_PROGRESS") or None
