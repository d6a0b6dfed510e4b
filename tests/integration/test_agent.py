"""``ember agent`` as a real process against an API of the test's own: runs once, signals, survives kills."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats.errors
import nats.js.errors
import orjson
import pytest
from opentelemetry import trace

from libs.messaging import deployments
from libs.messaging.bus import Bus
from libs.messaging.subjects import Names
from tests.agent_items import item, signalled_to
from tests.conftest import AuthNats
from tests.integration.agent_support import (
    PROJECT,
    SERVER,
    AgentProcess,
    FakeApi,
    agent_running,
    fake_api,
    kill_everything_under,
    lines,
    witness_folder,
)
from tests.support import Servers, eventually, live_pids_mentioning

RECORDING = """#!/bin/sh
echo "ran $deploy_action" >> "$witness"
echo "$greeting from $deploy_resource_name"
echo "to stderr" >&2
printf '%s world' "$greeting" > "$heat_outputs_path.result"
id -u > "$heat_outputs_path.uid"
"""


@pytest.fixture
def scratch_path(scratch_path: Path) -> Iterator[Path]:
    """The test's folder; what still runs in it at the end (a run left going by a failure) is killed."""
    yield scratch_path
    kill_everything_under(scratch_path)


def _runs_as() -> str:
    return str(pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.geteuid())


def _gone(pid_file: Path) -> bool:
    """Whether the process whose pid the script wrote is gone (not even a zombie left)."""
    return not Path(f"/proc/{pid_file.read_text().strip()}").exists()


async def _polls_after(api: FakeApi, more: int) -> None:
    """Until the agent has polled ``more`` times from now: it has seen the list again, that often."""
    target = api.polls + more
    await eventually(lambda: _true(api.polls >= target), what=f"{more} more polls")


async def _true(value: bool) -> bool:
    return value


async def test_a_script_runs_once_and_its_outputs_reach_the_signal(scratch_path: Path) -> None:
    witness = witness_folder(scratch_path) / "one"
    async with fake_api() as api:
        api.metadata = [item("one", RECORDING, inputs={"greeting": "hello", "witness": str(witness)},
                             outputs=("result", "uid", "missing"),
                             derived=signalled_to(api.signal_url("one")))]
        with agent_running(api, scratch_path) as agent:
            await eventually(lambda: _true(bool(api.signals_of("one"))), what="the signal")
            await _polls_after(api, 5)
            await agent.wait_logged("run finished")
        [got] = api.signals_of("one")
    assert got.verb == "POST"
    assert got.body == {"result": "hello world", "uid": f"{_runs_as()}\n",
                        "deploy_stdout": "hello from one\n",
                        "deploy_stderr": "to stderr\n", "deploy_status_code": 0}
    assert lines(witness) == ["ran CREATE"]


async def test_a_failing_script_signals_its_status_code_and_stderr(scratch_path: Path) -> None:
    async with fake_api() as api:
        api.metadata = [item("bad", "#!/bin/sh\necho partial\necho 'no such package' >&2\nexit 3\n",
                             derived=signalled_to(api.signal_url("bad"), "PUT"))]
        with agent_running(api, scratch_path):
            await eventually(lambda: _true(bool(api.signals_of("bad"))), what="the signal")
    [got] = api.signals_of("bad")
    assert got.verb == "PUT"
    assert got.body == {"deploy_stdout": "partial\n", "deploy_stderr": "no such package\n",
                        "deploy_status_code": 3}


async def test_a_run_over_its_time_limit_is_killed_and_reported(scratch_path: Path) -> None:
    pid_file = witness_folder(scratch_path) / "pid"
    script = f"#!/bin/sh\necho started\necho $$ > {pid_file}\nexec sleep 60\n"
    async with fake_api() as api:
        api.metadata = [item("slow", script, derived=signalled_to(api.signal_url("slow")))]
        with agent_running(api, scratch_path, "--timeout", "1"):
            await eventually(lambda: _true(bool(api.signals_of("slow"))), what="the signal")
    [got] = api.signals_of("slow")
    assert got.body == {"deploy_stdout": "started\n", "deploy_status_code": 124,
                        "deploy_stderr": "ember agent: the run was killed after 1 s, its time limit\n"}
    assert _gone(pid_file)


@pytest.mark.parametrize("ends", ["under the next agent", "while no agent runs"])
async def test_killing_the_agent_mid_run_runs_nothing_twice_and_still_signals(scratch_path: Path,
                                                                              ends: str) -> None:
    witnesses = witness_folder(scratch_path)
    release = witnesses / "release"
    script = (f"#!/bin/sh\necho ran >> {witnesses / 'runs'}\n"
              f"while [ ! -e {release} ]; do sleep 0.05; done\necho finished >> {witnesses / 'runs'}\n"
              "echo finished\n")
    async with fake_api() as api:
        api.metadata = [item("long", script, derived=signalled_to(api.signal_url("long"))),
                        item("next", f"#!/bin/sh\necho next >> {witnesses / 'runs'}\n",
                             derived=signalled_to(api.signal_url("next")))]
        with AgentProcess(api, scratch_path) as first:
            first.start()
            await eventually(lambda: _true(lines(witnesses / "runs") == ["ran"]), what="the run to begin")
            first.kill()
        if ends == "while no agent runs":
            release.touch()
            await eventually(lambda: _true(lines(witnesses / "runs") == ["ran", "finished"]),
                             what="the run to end with no agent")
        polls = api.polls
        with agent_running(api, scratch_path):
            await eventually(lambda: _true(api.polls > polls + 3), what="the second agent to poll")
            if ends == "under the next agent":
                # The run goes on under its own runner, which the new agent waits for: nothing is
                # started again, and the next config waits its turn.
                assert lines(witnesses / "runs") == ["ran"] and api.signals == []
                release.touch()
            await eventually(lambda: _true(len(api.signals) == 2), what="both signals")
            await _polls_after(api, 5)
    assert [(s.name, s.body["deploy_stdout"], s.body["deploy_status_code"]) for s in api.signals] == [
        ("long", "finished\n", 0), ("next", "", 0)]
    assert lines(witnesses / "runs") == ["ran", "finished", "next"]


async def test_a_result_not_delivered_is_signalled_by_the_next_agent_without_running_again(
        scratch_path: Path) -> None:
    witness = witness_folder(scratch_path) / "runs"
    async with fake_api() as api:
        api.metadata = [item("one", f"#!/bin/sh\necho ran >> {witness}\necho out\n",
                             derived=signalled_to(api.signal_url("one")))]
        api.answers = [503] * 1000
        with AgentProcess(api, scratch_path, "--signal-retry-seconds", "0.05") as first:
            first.start()
            await eventually(lambda: _true(api.attempts >= 2), what="signal attempts")
            first.kill()
        api.answers = []
        with agent_running(api, scratch_path):
            await eventually(lambda: _true(bool(api.signals)), what="the signal")
            await _polls_after(api, 5)
    assert [(s.name, s.body["deploy_stdout"]) for s in api.signals] == [("one", "out\n")]
    assert lines(witness) == ["ran"]


async def test_a_runner_killed_mid_run_is_reported_interrupted_and_not_run_again(scratch_path: Path) -> None:
    witnesses = witness_folder(scratch_path)
    script = f"#!/bin/sh\necho ran >> {witnesses / 'runs'}\necho half way\nexec sleep 60\n"
    async with fake_api() as api:
        api.metadata = [item("cut", script, derived=signalled_to(api.signal_url("cut")))]
        with agent_running(api, scratch_path) as agent:
            await eventually(lambda: _true(lines(witnesses / "runs") == ["ran"]), what="the run to begin")
            assert agent.process is not None
            # The runner and its script (both name the agent's folder), not the agent.
            doomed = [pid for pid in live_pids_mentioning(str(agent.workdir / "runs"))
                      if pid != agent.process.pid]
            assert doomed
            for pid in doomed:
                os.kill(pid, 9)
            await eventually(lambda: _true(bool(api.signals_of("cut"))), what="the signal")
            await _polls_after(api, 5)
    [got] = api.signals_of("cut")
    assert got.body["deploy_status_code"] != 0 and got.body["deploy_stdout"] == "half way\n"
    assert "the run was interrupted" in got.body["deploy_stderr"]
    assert lines(witnesses / "runs") == ["ran"]


async def test_heat_signal_gets_a_token_from_keystone_and_signals_the_resource(scratch_path: Path) -> None:
    async with fake_api() as api:
        heat = {"deploy_signal_transport": "HEAT_SIGNAL", "deploy_auth_url": f"{api.base}/identity/v3",
                "deploy_user_id": "dep-user", "deploy_username": "dep", "deploy_password": "dep-password",
                "deploy_project_id": "p-1", "deploy_stack_id": "web/4f1e",
                "deploy_resource_name": "config me"}
        api.metadata = [item("one", "#!/bin/sh\necho via heat\n", derived=heat)]
        api.answers = [503, 503]
        with agent_running(api, scratch_path, "--signal-retry-seconds", "0.05"):
            await eventually(lambda: _true(bool(api.signals)), what="the signal")
    [got] = api.signals
    assert (got.name, got.token) == ("p-1:web/4f1e:config me", "signal-token-3")
    assert got.body == {"deploy_stdout": "via heat\n", "deploy_stderr": "", "deploy_status_code": 0}


async def test_a_signal_refused_until_the_end_is_given_up_and_the_config_never_runs_again(
        scratch_path: Path) -> None:
    witness = witness_folder(scratch_path) / "runs"
    async with fake_api() as api:
        api.metadata = [item("one", f"#!/bin/sh\necho ran >> {witness}\n",
                             derived=signalled_to(api.signal_url("one")))]
        api.answers = [500] * 1000
        with agent_running(api, scratch_path, "--signal-attempts", "3",
                           "--signal-retry-seconds", "0.05") as agent:
            await agent.wait_logged("signal given up")
            await _polls_after(api, 5)
        assert api.attempts == 3
    assert lines(witness) == ["ran"]


async def test_configs_without_a_hook_are_skipped_as_heat_config_skips_them(scratch_path: Path) -> None:
    hooks = scratch_path / "hooks"
    hooks.mkdir()
    (hooks / "echo-hook").write_text(
        '#!/bin/sh\ncat > /dev/null\necho \'{"deploy_status_code": 0, "said": "hook"}\'\n')
    (hooks / "echo-hook").chmod(0o755)
    async with fake_api() as api:
        api.metadata = [item("puppet one", group="puppet", derived=signalled_to(api.signal_url("puppet"))),
                        item("ungrouped", group="Heat::Ungrouped",
                             derived=signalled_to(api.signal_url("ung"))),
                        item("hooked", group="echo-hook", derived=signalled_to(api.signal_url("hooked"))),
                        item("script", derived=signalled_to(api.signal_url("script")))]
        with agent_running(api, scratch_path, "--hooks-dir", str(hooks)) as agent:
            await eventually(lambda: _true(len(api.signals) == 2), what="the signals of the runnable ones")
            await _polls_after(api, 5)
        log = agent.log.read_text()
    assert {s.name: s.body.get("said") for s in api.signals} == {"hooked": "hook", "script": None}
    # Logged once each, not once a poll.
    assert log.count("no hook for group 'puppet'") == 1
    assert log.count("no hook for group 'Heat::Ungrouped'") == 1


@pytest.mark.skipif(shutil.which("ansible-playbook") is None,
                    reason="ansible-playbook is not installed here (.ci/run installs Debian's ansible-core)")
async def test_an_ansible_playbook_runs_with_its_inputs(scratch_path: Path) -> None:
    playbook = ("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
                "    - copy: {content: '{{ greeting }}', dest: '{{ heat_outputs_path }}.said'}\n")
    async with fake_api() as api:
        api.metadata = [item("play", playbook, group="ansible", inputs={"greeting": "hi"}, outputs=("said",),
                             derived=signalled_to(api.signal_url("play")))]
        with agent_running(api, scratch_path):
            await eventually(lambda: _true(bool(api.signals)), timeout=120, what="the signal")
    [got] = api.signals
    assert (got.body["deploy_status_code"], got.body["said"]) == (0, "hi")


async def test_a_pushed_config_runs_once_and_a_repush_runs_nothing(scratch_path: Path,
                                                                   servers: Servers) -> None:
    prefix = f"agent{uuid.uuid4().hex[:8]}"
    witness = witness_folder(scratch_path) / "runs"
    async with fake_api() as api, Bus.connect(servers.nats_url, Names(prefix), trace.get_tracer("test"),
                                              client_name="test-engine") as bus:
        first = item("first", f"#!/bin/sh\necho first >> {witness}\n",
                     derived=signalled_to(api.signal_url("1")))
        second = item("second", f"#!/bin/sh\necho second >> {witness}\n",
                      derived=signalled_to(api.signal_url("2")))
        # Polled once at the start (nothing then), and not again within the test: what runs was pushed.
        with agent_running(api, scratch_path, "--interval", "3600", "--nats-url", servers.nats_url,
                           "--nats-prefix", prefix) as agent:
            await agent.wait_logged("listening for pushed deployments")
            await deployments.publish(bus, PROJECT, SERVER, [first])
            await eventually(lambda: _true(bool(api.signals)), what="the first signal")
            for _ in range(3):
                await deployments.publish(bus, PROJECT, SERVER, [first])
            await deployments.publish(bus, PROJECT, "another-server", [second])
            await deployments.publish(bus, PROJECT, SERVER, [first, second])
            await eventually(lambda: _true(len(api.signals) == 2), what="the second signal")
        assert api.polls == 1
    assert [s.name for s in api.signals] == ["1", "2"]
    assert lines(witness) == ["first", "second"]


async def test_a_push_reaches_the_agent_as_its_project_s_nats_user(scratch_path: Path,
                                                                  auth_nats: AuthNats) -> None:
    """Under nats-server's authorization (as ``ember dev`` runs it): a worker pushes, the project hears."""
    alpha, worker = auth_nats.auth.project("alpha"), auth_nats.auth.service("worker")
    async with fake_api() as api, Bus.connect(auth_nats.url, Names(auth_nats.prefix),
                                              trace.get_tracer("test"), client_name="test-worker",
                                              user=worker.user, password=worker.password) as bus:
        pushed = item("pushed", "#!/bin/sh\necho pushed\n", derived=signalled_to(api.signal_url("pushed")))
        agent_env = {"EMBER_AGENT_NATS_USER": alpha.user, "EMBER_AGENT_NATS_PASSWORD": alpha.password}
        with AgentProcess(api, scratch_path, "--project", "alpha", "--interval", "3600", "--nats-url",
                          auth_nats.url, "--nats-prefix", auth_nats.prefix, env=agent_env) as agent:
            agent.start()
            await agent.wait_logged("listening for pushed deployments")
            await deployments.publish(bus, "alpha", SERVER, [pushed])
            await eventually(lambda: _true(bool(api.signals)), what="the signal")
            assert agent.stop() == 0
    assert [(s.name, s.body["deploy_stdout"]) for s in api.signals] == [("pushed", "pushed\n")]
    assert "Permissions Violation" not in auth_nats.log.read_text()


def _published_to(subject: str) -> dict[str, str]:
    return {"deploy_signal_transport": "NATS_SIGNAL", "deploy_signal_subject": subject}


async def _last_on(bus: Bus, subject: str) -> Any:
    """The message last kept on ``subject`` by the signals stream, once there is one."""
    async def kept() -> Any:
        with contextlib.suppress(nats.js.errors.NotFoundError, nats.errors.TimeoutError):
            return await bus.js.get_last_msg(bus.names.signals_stream.name, subject)
        return None
    return await eventually(kept, what=f"a signal kept on {subject}")


async def test_nats_signal_is_published_to_jetstream_and_tried_again_until_the_stream_acks(
        scratch_path: Path, servers: Servers) -> None:
    names = Names(f"agent{uuid.uuid4().hex[:8]}")
    subject = names.signal(PROJECT, "4f1e", "one")
    async with fake_api() as api, Bus.connect(servers.nats_url, names, trace.get_tracer("test"),
                                              client_name="test-engine") as bus:
        config = item("one", "#!/bin/sh\necho over nats\necho oops >&2\nexit 4\n",
                      derived=_published_to(subject))
        api.metadata = [config]
        try:
            with agent_running(api, scratch_path, "--nats-url", servers.nats_url, "--nats-prefix",
                               names.prefix, "--signal-retry-seconds", "0.05") as agent:
                # No stream yet (no worker has started): nobody acks, and the agent tries again.
                await agent.wait_logged("signal not delivered; trying again")
                await bus.ensure_topology(streams=[names.signals_stream], consumers=[])
                kept = await _last_on(bus, subject)
                await agent.wait_logged("signal delivered")
            assert orjson.loads(kept.data) == {"deploy_stdout": "over nats\n", "deploy_stderr": "oops\n",
                                               "deploy_status_code": 4}
            # The run's hash: a publish again of the same run is kept once.
            assert kept.headers["Nats-Msg-Id"] == config["ember_hash"]
            assert api.signals == []
        finally:
            with contextlib.suppress(Exception):
                await bus.delete_stream(names.signals_stream.name)


async def test_nats_signal_without_nats_settings_is_given_up_saying_why(scratch_path: Path) -> None:
    async with fake_api() as api:
        api.metadata = [item("one", "#!/bin/sh\necho hi\n", derived=_published_to("ember.signal.p.s.one"))]
        with agent_running(api, scratch_path) as agent:
            await agent.wait_logged("signal given up")
    assert agent.logged("this agent has no NATS settings (--nats-url, EMBER_AGENT_NATS_URL)")


async def test_nats_signal_as_the_project_s_user_and_never_on_another_project_s_subject(
        scratch_path: Path, auth_nats: AuthNats) -> None:
    """Under authorization: alpha's agent answers on alpha's subjects; beta may not publish there."""
    names = Names(auth_nats.prefix)
    alpha, worker, admin = (auth_nats.auth.project("alpha"), auth_nats.auth.service("worker"),
                            auth_nats.auth.admin)
    subject = names.signal("alpha", str(uuid.uuid4()), "deploy")
    async with fake_api() as api, Bus.connect(auth_nats.url, names, trace.get_tracer("test"),
                                              client_name="test-worker", user=worker.user,
                                              password=worker.password) as bus, \
            Bus.connect(auth_nats.url, names, trace.get_tracer("test"), client_name="test-operator",
                        user=admin.user, password=admin.password,
                        inbox_prefix=admin.inbox_prefix) as operator:
        await bus.ensure_topology(streams=[names.signals_stream], consumers=[names.deployment_signals])
        pushed = item("one", "#!/bin/sh\necho from alpha\n", derived=_published_to(subject))
        agent_env = {"EMBER_AGENT_NATS_USER": alpha.user, "EMBER_AGENT_NATS_PASSWORD": alpha.password}
        with AgentProcess(api, scratch_path, "--project", "alpha", "--interval", "3600", "--nats-url",
                          auth_nats.url, "--nats-prefix", auth_nats.prefix, env=agent_env) as agent:
            agent.start()
            await agent.wait_logged("listening for pushed deployments")
            await deployments.publish(bus, "alpha", SERVER, [pushed])
            kept = await _last_on(operator, subject)
            await agent.wait_logged("signal delivered")
            assert agent.stop() == 0
        assert orjson.loads(kept.data)["deploy_stdout"] == "from alpha\n"
        errors: list[str] = []
        beta = await auth_nats.connect(auth_nats.auth.project("beta"), errors)
        try:
            with pytest.raises(nats.errors.TimeoutError):
                await beta.jetstream(timeout=1).publish(subject, b'{"deploy_status_code": 0}')
        finally:
            await beta.close()
        assert any(f'permissions violation for publish to "{subject}"' in e for e in errors), errors
        logged = auth_nats.log.read_text()
        assert not [line for line in logged.splitlines() if "Violation" in line and "project.alpha" in line]
        assert (await operator.js.stream_info(names.signals_stream.name)).state.messages == 1
