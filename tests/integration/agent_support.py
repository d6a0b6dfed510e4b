"""For ``ember agent``'s tests: a small API of the test's own (metadata, signals, a Keystone), and the agent.

The API is a fake of Ember's, not a mock of a driver: it serves the
metadata body the agent polls and records each signal it gets, so a test
sees what the agent sent over real HTTP.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

from tests.support import ember, eventually, live_pids_mentioning

PROJECT, SERVER = "demo", "srv-1"
TOKEN = "agent-token"


@dataclasses.dataclass
class Signal:
    name: str
    verb: str
    body: dict[str, Any]
    token: str | None


class FakeApi:
    def __init__(self) -> None:
        self.metadata: list[dict[str, Any]] = []
        self.polls = 0
        self.signals: list[Signal] = []
        self.attempts = 0
        # Answers for the next signal attempts, first first (then 200).
        self.answers: list[int] = []
        self.tokens_issued = 0
        self.base = ""

    async def metadata_route(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Auth-Token") != TOKEN:
            return web.json_response({"error": {"message": "no token"}}, status=401)
        if (request.match_info["project"], request.match_info["server"]) != (PROJECT, SERVER):
            return web.json_response({"metadata": []})
        self.polls += 1
        return web.json_response({"metadata": self.metadata})

    async def _record(self, request: web.Request, name: str) -> web.Response:
        self.attempts += 1
        body = orjson.loads(await request.read())
        status = self.answers.pop(0) if self.answers else 200
        if status == 200:
            self.signals.append(Signal(name, request.method, body, request.headers.get("X-Auth-Token")))
        return web.json_response({}, status=status)

    async def url_signal(self, request: web.Request) -> web.Response:
        return await self._record(request, request.match_info["name"])

    async def resource_signal(self, request: web.Request) -> web.Response:
        m = request.match_info
        return await self._record(request, f"{m['project']}:{m['stack']}/{m['stack_id']}:{m['resource']}")

    async def tokens(self, request: web.Request) -> web.Response:
        asked = (await request.json())["auth"]
        user = asked["identity"]["password"]["user"]
        if (user.get("id"), user.get("password")) != ("dep-user", "dep-password"):
            return web.json_response({"error": {"code": 401}}, status=401)
        project = asked["scope"]["project"]["id"]
        self.tokens_issued += 1
        catalog = [{"type": "orchestration", "endpoints": [
            {"interface": "public", "region": "RegionOne", "url": f"{self.base}/v1/{project}"}]}]
        return web.json_response({"token": {"catalog": catalog}}, status=201,
                                 headers={"X-Subject-Token": f"signal-token-{self.tokens_issued}"})

    def signal_url(self, name: str) -> str:
        return f"{self.base}/signals/{name}"

    def signals_of(self, name: str) -> list[Signal]:
        return [s for s in self.signals if s.name == name]


@contextlib.asynccontextmanager
async def fake_api() -> AsyncIterator[FakeApi]:
    api = FakeApi()
    app = web.Application()
    app.router.add_get("/v1/{project}/software_deployments/metadata/{server}", api.metadata_route)
    app.router.add_route("*", "/signals/{name}", api.url_signal)
    app.router.add_post("/identity/v3/auth/tokens", api.tokens)
    app.router.add_post("/v1/{project}/stacks/{stack}/{stack_id}/resources/{resource}/signal",
                        api.resource_signal)
    server = TestServer(app)
    await server.start_server()
    api.base = str(server.make_url("")).rstrip("/")
    try:
        yield api
    finally:
        await server.close()


class AgentProcess:
    """``ember agent`` as a real process, started and stopped by the test.

    Used as a context: at its end the agent is killed if it still runs (its runners and scripts
    outlive it by design: :func:`kill_everything_under` ends them), and on a failure its log and its
    runners' logs are printed, for pytest to show.
    """

    def __init__(self, api: FakeApi, scratch: Path, *options: str, env: dict[str, str] | None = None) -> None:
        self.workdir = scratch / "agent"
        self.log = scratch / "agent.log"
        self._args = ["agent", "--api-url", api.base, "--project", PROJECT, "--server-id", SERVER,
                      "--workdir", str(self.workdir), "--interval", "0.2", *options]
        self._env = {"EMBER_AGENT_TOKEN": TOKEN, "EMBER_LOG_LEVEL": "DEBUG", "EMBER_LOG_FORMAT": "json",
                     **(env or {})}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self.process = ember(self._args, self._env, self.log)

    def kill(self) -> None:
        """SIGKILL to the agent's whole process group: what a crash or a kill of its unit does."""
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> int:
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(20)

    def __enter__(self) -> AgentProcess:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.kill()
        if kind is not None:
            for log in (self.log, *sorted(self.workdir.rglob("runner.log"))):
                if log.exists():
                    print(f"==== {log}\n{log.read_text(errors='replace')[-6000:]}")

    def logged(self, text: str) -> bool:
        return self.log.exists() and text in self.log.read_text(errors="replace")

    async def wait_logged(self, text: str, timeout: float = 20.0) -> None:
        """Polled on the event loop, where the test's API answers the agent meanwhile."""
        async def seen() -> bool:
            return self.logged(text)

        await eventually(seen, timeout=timeout, what=f"the agent to log {text!r}")


@contextlib.contextmanager
def agent_running(api: FakeApi, scratch: Path, *options: str) -> Iterator[AgentProcess]:
    with AgentProcess(api, scratch, *options) as agent:
        agent.start()
        yield agent
        assert agent.stop() == 0


def kill_everything_under(scratch: Path) -> None:
    """Agents, runners and scripts a test left (each names its folder on its command line)."""
    for pid in live_pids_mentioning(str(scratch)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def witness_folder(scratch: Path) -> Path:
    """A folder the runs' user (nobody, under root) may write: scripts leave their marks there."""
    folder = scratch / "witness"
    folder.mkdir(exist_ok=True)
    folder.chmod(0o777)
    return folder


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []
