"""What each hook starts and reports (libs/agent/script_hook, ansible_hook, external_hook, results)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from libs.agent import results
from libs.agent.ansible_hook import AnsibleHook
from libs.agent.configs import DerivedConfig, parse
from libs.agent.external_hook import ExternalHook
from libs.agent.hook_registry import Hooks, register
from libs.agent.hooks import Finished, Launch, Place, hook_name
from libs.agent.script_hook import ScriptHook, as_variable
from tests.agent_items import item

PLACE = Place(work=Path("/runs/k/work"), user="nobody")


def _config(*args: Any, **kwargs: Any) -> DerivedConfig:
    config = parse(item(*args, **kwargs))
    assert isinstance(config, DerivedConfig)
    return config


@pytest.mark.parametrize(("value", "variable"), [
    ("text", "text"), ("", ""), (None, ""), (8080, "8080"), (1.5, "1.5"), (True, "true"), (False, "false"),
    ({"a": [1, 2]}, '{"a": [1, 2]}'), (["x", "y"], '["x", "y"]'),
])
def test_an_input_as_an_environment_variable(value: Any, variable: str) -> None:
    assert as_variable(value) == variable


def test_the_script_hook_runs_the_config_as_a_file_with_its_inputs_as_variables() -> None:
    config = _config("one", "#!/bin/sh\necho $greeting", inputs={"greeting": "hello"}, outputs=("url",))
    launch = ScriptHook().launch(config, PLACE)
    script = PLACE.work / "config"
    assert launch.argv == (str(script),)
    assert [(f.path, f.content, f.mode) for f in launch.files] == [
        (script, b"#!/bin/sh\necho $greeting", 0o700)]
    assert launch.outputs_prefix == PLACE.work / "heat_outputs"
    assert launch.env == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/runs/k/work",
        "LANG": "C.UTF-8", "USER": "nobody", "LOGNAME": "nobody",
        "greeting": "hello", "deploy_server_id": "srv-1", "deploy_action": "CREATE",
        "deploy_stack_id": "web/4f1e", "deploy_resource_name": "one", "deploy_signal_transport": "NO_SIGNAL",
        "heat_outputs_path": "/runs/k/work/heat_outputs"}


def test_none_of_the_agent_s_own_environment_reaches_a_script(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_AGENT_TOKEN", "secret")
    launch = ScriptHook().launch(_config("one"), PLACE)
    assert "EMBER_AGENT_TOKEN" not in launch.env


@pytest.mark.parametrize(("finished", "expected"), [
    (Finished(0, "out", "err", {"url": "http://x", "undeclared": "no"}),
     {"url": "http://x", "deploy_stdout": "out", "deploy_stderr": "err", "deploy_status_code": 0}),
    (Finished(3, "", "boom\n", {}),
     {"deploy_stdout": "", "deploy_stderr": "boom\n", "deploy_status_code": 3}),
])
def test_the_script_hook_s_result(finished: Finished, expected: dict[str, Any]) -> None:
    assert ScriptHook().result(_config("one", outputs=("url", "port")), finished) == expected


def test_the_ansible_hook_runs_the_playbook_with_the_inputs_as_extra_variables() -> None:
    body = item("play", "- hosts: all\n", group="ansible", inputs={"name": "web"})
    body["options"] = {"tags": "setup", "inventory": "hosts"}
    config = parse(body)
    assert isinstance(config, DerivedConfig)
    launch = AnsibleHook("/usr/bin/ansible-playbook").launch(config, PLACE)
    assert launch.argv == ("/usr/bin/ansible-playbook", "-i", "/runs/k/work/hosts", "--tags", "setup",
                           "/runs/k/work/playbook.yaml", "--extra-vars", "@/runs/k/work/variables.json")
    variables = next(f for f in launch.files if f.path.name == "variables.json").content.decode()
    assert '"heat_config_id": "' + config.id + '"' in variables and '"name": "web"' in variables
    # Ansible's temporary files stay in the run's folder: the unprivileged user's home does not exist.
    assert (launch.env["ANSIBLE_REMOTE_TMP"], launch.env["ANSIBLE_LOCAL_TEMP"]) == (
        "/runs/k/work/.ansible/tmp", "/runs/k/work/.ansible/local")
    assert AnsibleHook("ansible-playbook").launch(_config("p", "", group="ansible"), PLACE) == Launch((), {})


def test_an_executable_hook_gets_the_config_on_stdin_and_its_json_is_the_result() -> None:
    hook = ExternalHook(Path("/hooks/puppet"))
    config = _config("one", group="puppet")
    launch = hook.launch(config, PLACE)
    assert launch.argv == ("/hooks/puppet",) and b'"group": "puppet"' in launch.stdin
    said = hook.result(config, Finished(0, '{"deploy_status_code": 0, "x": 1}', "", {}))
    assert said == {"deploy_status_code": 0, "x": 1}
    crashed = hook.result(config, Finished(1, "Traceback", "oops", {}))
    assert crashed == {"deploy_stdout": "Traceback", "deploy_stderr": "oops", "deploy_status_code": 1}


def test_hooks_are_found_by_group_builtin_registered_or_executable(tmp_path: Path) -> None:
    (tmp_path / "salt").write_text("#!/bin/sh\n")
    (tmp_path / "salt").chmod(0o755)
    (tmp_path / "chef").write_text("not executable")
    register("my-tool", ScriptHook)
    hooks = Hooks(tmp_path)
    assert isinstance(hooks.find("script"), ScriptHook)
    assert isinstance(hooks.find("my-tool"), ScriptHook)
    found = hooks.find("salt")
    assert isinstance(found, ExternalHook) and found.path == tmp_path / "salt"
    assert hooks.available({"script", "salt", "chef", "Heat::Ungrouped", "../salt"}) >= {"script", "salt"}
    assert not hooks.available({"chef", "Heat::Ungrouped"})
    assert hook_name("../salt") == "salt" and hook_name("Heat::Ungrouped") == "HeatUngrouped"


def test_a_run_past_its_time_limit_fails_and_says_why() -> None:
    killed = {"deploy_stdout": "", "deploy_stderr": "working", "deploy_status_code": -15}
    said = results.timed_out(killed, 2.5)
    assert said == {"deploy_stdout": "", "deploy_status_code": 124,
                    "deploy_stderr": "working\nember agent: the run was killed after 2.5 s, its time limit\n"}
    assert results.interrupted("half", "")["deploy_status_code"] != 0


@pytest.mark.parametrize("limit", [50_000, 5_000, 600, 200])
def test_a_signal_too_big_keeps_the_ends_of_stdout_and_stderr(limit: int) -> None:
    result = {"url": "http://x", "deploy_stdout": "o" * 20_000 + "LAST OUT", "deploy_status_code": 1,
              "deploy_stderr": "é\n" * 10_000 + "LAST ERR"}
    fitted = results.fitted(result, limit)
    assert len(orjson.dumps(fitted)) <= limit
    assert fitted["url"] == "http://x" and fitted["deploy_status_code"] == 1
    for name, end in (("deploy_stdout", "LAST OUT"), ("deploy_stderr", "LAST ERR")):
        assert fitted[name].startswith(results.CUT_MARK) and fitted[name].endswith(end)
    assert results.fitted(result, 10**6) == result
