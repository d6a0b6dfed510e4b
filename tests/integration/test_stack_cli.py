"""``ember stack ...`` as a user runs it: a real process against a real API and engine."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from libs.config import Settings
from services.api.app import make_app
from tests.integration.engine_support import engine, hot
from tests.support import eventually

SCRIPT = Path(sys.executable).with_name("ember")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "libs.cli"]


@dataclasses.dataclass(frozen=True)
class Api:
    url: str
    session: aiohttp.ClientSession


@pytest.fixture
async def api(settings: Settings, aiohttp_server: Callable[[web.Application], Awaitable[TestServer]]
              ) -> AsyncIterator[Api]:
    small = dataclasses.replace(settings, worker_concurrency=2, hook_sweep_seconds=0.2)
    async with engine(small):
        server = await aiohttp_server(make_app(small))
        url = str(server.make_url("")).rstrip("/")
        async with aiohttp.ClientSession() as session:
            yield Api(url, session)


def _env(url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBER_", "OS_"))}
    env["EMBER_API_URL"] = url
    return env


async def _ember(api: Api, *args: str) -> tuple[int, str, str]:
    """``ember stack <args>`` run to its end: exit status, stdout, stderr."""
    proc = await asyncio.create_subprocess_exec(*COMMAND, "stack", *args, env=_env(api.url),
                                                stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def _ok(api: Api, *args: str) -> list[str]:
    status, out, err = await _ember(api, *args)
    assert status == 0, (args, out, err)
    return out.splitlines()


class Watch:
    """``ember stack watch`` running, its stdout (not a terminal) read line by line as it comes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, api: Api, *args: str) -> Watch:
        proc = await asyncio.create_subprocess_exec(*COMMAND, "stack", "watch", *args, env=_env(api.url),
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
        return cls(proc)

    async def _read(self) -> None:
        assert self.proc.stdout is not None
        async for raw in self.proc.stdout:
            self.lines.append(raw.decode().rstrip("\n"))

    async def shows(self, *words: str) -> str:
        """The first line with all these words in it, once the watch has printed it."""
        async def probe() -> str | None:
            return next((x for x in self.lines if all(w in x for w in words)), None)
        try:
            return await eventually(probe, timeout=30, what=f"a watch line with {words}")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the watch printed {self.lines}") from None

    async def exit_status(self) -> int:
        status = await asyncio.wait_for(self.proc.wait(), timeout=30)
        await self._reader
        return status

    async def stop(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        await self._reader


def _test(value: Any) -> dict[str, Any]:
    return {"type": "OS::Heat::TestResource", "properties": {"value": value}}


async def _create(api: Api, name: str, template: dict[str, Any], environment: dict[str, Any] | None = None
                  ) -> str:
    body = {"stack_name": name, "template": template, "environment": environment or {}}
    async with api.session.post(f"{api.url}/v1/demo/stacks", json=body) as r:
        assert r.status == 201, await r.text()
        return f"{api.url}/v1/demo/stacks/{name}/{(await r.json())['stack']['id']}"


async def _settled(api: Api, url: str, status: str) -> None:
    async def probe() -> bool:
        async with api.session.get(url) as r:
            return bool((await r.json())["stack"]["stack_status"] == status)
    await eventually(probe, timeout=30, what=f"{url} to reach {status}")


async def _update(api: Api, url: str, template: dict[str, Any]) -> None:
    async with api.session.patch(url, json={"template": template}) as r:
        assert r.status == 202, await r.text()


async def _paused(api: Api, stack: str, expected: str) -> list[str]:
    async def probe() -> list[str] | None:
        lines = await _ok(api, "paused", stack)
        return lines if any(x.startswith(expected) for x in lines) else None
    return await eventually(probe, timeout=30, interval=0.2, what=f"{expected} paused")


def _chain(value: str) -> dict[str, Any]:
    return hot({"a": _test(value), "b": _test({"get_attr": ["a", "output"]}),
                "c": _test({"get_attr": ["b", "output"]})})


@pytest.mark.slow_ci  # 16 s; to keep test.sh under 15 minutes
async def test_break_then_an_update_pauses_and_step_continue_and_watch_follow_it(api: Api) -> None:
    url = await _create(api, "dbg", _chain("A"))
    await _settled(api, url, "CREATE_COMPLETE")
    [set_a] = await _ok(api, "break", "dbg", "a", "--hook", "pre-update")
    assert set_a.startswith("set ") and set_a.endswith("  a  at pre-update")
    [set_c] = await _ok(api, "break", "dbg", "c", "--hook", "pre-update,pre-delete",
                        "--type", "OS::Heat::TestResource", "--timeout", "600", "--on-timeout", "continue")
    c_id = set_c.split()[1]
    assert set_c.endswith("  c  at pre-update, pre-delete  type OS::Heat::TestResource  timeout 600s, then "
                          "continue")
    assert sorted(x.split("  ")[1] for x in await _ok(api, "break", "dbg", "--list")) == ["a", "c"]
    assert await _ok(api, "break", "dbg", "--clear", c_id) == [f"cleared breakpoint {c_id}"]
    assert [x.split("  ")[1] for x in await _ok(api, "break", "dbg", "--list")] == ["a"]

    # One watch from before the update, for ever; one from after it, until the stack settles.
    forever = await Watch.start(api, "dbg")
    watch: Watch | None = None
    try:
        await forever.shows("stack dbg  CREATE_COMPLETE")
        await forever.shows("c  CREATE_COMPLETE")
        await _update(api, url, _chain("A2"))
        watch = await Watch.start(api, "dbg", "--until-settled")
        [paused] = await _paused(api, "dbg", "a  at pre-update")
        assert paused.endswith("by breakpoint")
        for each in (forever, watch):
            await each.shows("a  CREATE_COMPLETE  ⏸ pre-update")
            await each.shows("stack dbg  UPDATE_IN_PROGRESS  Paused at breakpoints: a")

        assert await _ok(api, "step", "dbg") == ["released dbg/a at pre-update"]
        [paused] = await _paused(api, "dbg", "b  at pre-update")  # stepping pauses the next node
        assert paused.endswith("by step")
        for each in (forever, watch):
            await each.shows("a  UPDATE_COMPLETE")
            await each.shows("b  CREATE_COMPLETE  ⏸ pre-update")
        assert await _ok(api, "continue", "dbg") == ["released dbg/b at pre-update"]

        assert await watch.exit_status() == 0
        await forever.shows("stack dbg  UPDATE_COMPLETE")
    finally:
        for running in (forever, watch):
            if running is not None:
                await running.stop()
    assert watch.lines[-1].startswith("stack dbg  UPDATE_COMPLETE")
    assert any(x.startswith("c  UPDATE_COMPLETE") for x in watch.lines)
    assert not any("⏸" in x for x in watch.lines + forever.lines if x.startswith("c  "))
    assert await _ok(api, "continue", "dbg") == ["nothing was paused"]
    assert await _ok(api, "step", "dbg") == ["nothing was paused"]
    assert await _ok(api, "paused", "dbg") == ["nothing is paused"]
    assert await _ok(api, "break", "dbg", "--clear") == ["cleared every breakpoint"]
    assert await _ok(api, "break", "dbg", "--list") == ["no breakpoints"]


async def test_watch_until_settled_exits_1_when_the_stack_fails(api: Api) -> None:
    url = await _create(api, "doomed", hot({"a": _test("A")}))
    await _settled(api, url, "CREATE_COMPLETE")
    await _ok(api, "break", "doomed", "a", "--hook", "pre-update", "--timeout", "1.5")
    await _update(api, url, hot({"a": _test("A2")}))
    watch = await Watch.start(api, "doomed", "--until-settled")
    try:
        assert await watch.exit_status() == 1
    finally:
        await watch.stop()
    await watch.shows("a  UPDATE_FAILED  Hook pre-update timed out")
    assert [x for x in watch.lines if x.startswith("stack ")][-1].startswith(
        "stack doomed  UPDATE_FAILED  Resource UPDATE failed: Hook pre-update timed out")


async def test_watch_follows_a_nested_stack_made_while_it_watches(api: Api) -> None:
    inner = "heat_template_version: 2016-10-14\nresources:\n  deep: {type: OS::Heat::TestResource}\n"
    nest = {"type": "OS::Heat::Stack", "properties": {"template": inner}, "depends_on": "first"}
    template = hot({"first": _test("F"), "nest": nest})
    hooks = {"resource_registry": {"resources": {"first": {"hooks": "pre-create"}}}}
    await _create(api, "outer", template, hooks)
    await _paused(api, "outer", "first  at pre-create")
    watch = await Watch.start(api, "outer", "--until-settled")
    try:
        await watch.shows("first", "⏸ pre-create")
        assert await _ok(api, "continue", "outer") == ["released outer/first at pre-create"]
        assert await watch.exit_status() == 0
    finally:
        await watch.stop()
    await watch.shows("nest  CREATE_COMPLETE")
    await watch.shows("nest/deep  CREATE_COMPLETE")
    assert watch.lines[-1].startswith("stack outer  CREATE_COMPLETE"), watch.lines


async def test_faults_are_the_apis_message_on_stderr_with_status_1(api: Api) -> None:
    url = await _create(api, "strict", hot({"a": _test("A")}))
    await _settled(api, url, "CREATE_COMPLETE")
    status, out, err = await _ember(api, "break", "strict", "a", "--hook", "pre-lunch")
    assert (status, out) == (1, "")
    assert err.startswith('breakpoint.hooks[0]: Invalid hook type "pre-lunch" for resource breakpoint')
    assert await _ok(api, "break", "strict", "--list") == ["no breakpoints"]
    missing = "00000000-0000-0000-0000-000000000000"
    assert await _ember(api, "break", "strict", "--clear", missing) == (
        1, "", f"The Breakpoint ({missing}) could not be found.\n")
    assert await _ember(api, "step", "nope") == (1, "", "The Stack (nope) could not be found.\n")
    status, _, err = await _ember(api, "watch", "nope", "--until-settled")
    assert (status, err) == (1, "The Stack (nope) could not be found.\n")
    status, _, err = await _ember(api, "break", "strict")
    assert status == 2 and "--list or --clear is needed" in err
