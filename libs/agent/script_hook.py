"""The ``script`` group, as heat-config's script hook: the config is a program, its inputs its environment.

The config's text is written to a file and executed (so it needs its own
``#!`` line); every input is an environment variable of its name, and
``heat_outputs_path`` names a path the program writes each declared output
beside, as ``$heat_outputs_path.<output name>``. The result is those outputs
with ``deploy_stdout``, ``deploy_stderr`` and ``deploy_status_code``.
"""

from __future__ import annotations

import json
from typing import Any

from libs.agent.configs import DerivedConfig
from libs.agent.hooks import FileToWrite, Finished, Launch, Place, standard_result

SCRIPT_NAME = "config"
OUTPUTS_NAME = "heat_outputs"


def as_variable(value: Any) -> str:
    """An input's value as an environment variable: maps and lists as JSON, as Heat's hook passes them.

    Heat's hook hands other non-text values to the process as they are and
    fails on them; here a number is its digits and a boolean ``true``/``false``.
    """
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value)
    return str(value)


def environment(config: DerivedConfig, place: Place) -> dict[str, str]:
    env = place.environment
    for item in config.inputs:
        env[item.name] = as_variable(item.value)
    env["heat_outputs_path"] = str(place.work / OUTPUTS_NAME)
    return env


class ScriptHook:
    def launch(self, config: DerivedConfig, place: Place) -> Launch:
        script = place.work / SCRIPT_NAME
        text = config.document.get("config")
        body = text if isinstance(text, str) else ("" if text is None else json.dumps(text))
        return Launch(argv=(str(script),), env=environment(config, place),
                      files=(FileToWrite(script, body.encode(), 0o700),),
                      outputs_prefix=place.work / OUTPUTS_NAME)

    def result(self, config: DerivedConfig, finished: Finished) -> dict[str, Any]:
        return standard_result(config, finished)
