"""The ``ansible`` group, as heat-config's ansible hook: the config is a playbook run on this machine.

Inputs (with ``heat_config_id`` and ``heat_outputs_path``) are the playbook's
extra variables; the config's ``options`` may name ``tags``, ``skip_tags``,
``modulepath``, ``callback_plugins`` and an ``inventory`` file in the run's
folder (else the inventory is ``localhost,``). Outputs and the result are as
for scripts. Only where ``ansible-playbook`` is installed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from typing import Any

from libs.agent.configs import DerivedConfig
from libs.agent.hooks import FileToWrite, Finished, Launch, Place, standard_result

PLAYBOOK_NAME = "playbook.yaml"
VARIABLES_NAME = "variables.json"
OUTPUTS_NAME = "heat_outputs"
DEFAULT_INVENTORY = "localhost,"


def _option(options: Mapping[str, Any], name: str) -> str | None:
    value = options.get(name)
    return value if isinstance(value, str) and value else None


class AnsibleHook:
    def __init__(self, command: str) -> None:
        self._command = command

    def launch(self, config: DerivedConfig, place: Place) -> Launch:
        playbook = config.document.get("config")
        if not isinstance(playbook, str) or not playbook.strip():
            return Launch(argv=(), env={})
        raw_options = config.document.get("options")
        options: Mapping[str, Any] = raw_options if isinstance(raw_options, Mapping) else {}
        outputs = place.work / OUTPUTS_NAME
        variables = {"heat_config_id": config.id, **config.values, "heat_outputs_path": str(outputs)}
        inventory = _option(options, "inventory")
        argv = [self._command, "-i", str(place.work / inventory) if inventory else DEFAULT_INVENTORY]
        for flag, name in (("--tags", "tags"), ("--skip-tags", "skip_tags"), ("--module-path", "modulepath")):
            value = _option(options, name)
            if value:
                argv += [flag, value]
        argv += [str(place.work / PLAYBOOK_NAME), "--extra-vars", f"@{place.work / VARIABLES_NAME}"]
        env = place.environment
        # Ansible puts its temporary files under the home folder of the user's passwd entry, not
        # $HOME, and the unprivileged user's (nobody's) is /nonexistent: every task was unreachable.
        env["ANSIBLE_REMOTE_TMP"] = str(place.work / ".ansible" / "tmp")
        env["ANSIBLE_LOCAL_TEMP"] = str(place.work / ".ansible" / "local")
        callbacks = _option(options, "callback_plugins")
        if callbacks:
            env["ANSIBLE_CALLBACK_PLUGINS"] = callbacks
        return Launch(argv=tuple(argv), env=env, outputs_prefix=outputs, files=(
            FileToWrite(place.work / PLAYBOOK_NAME, playbook.encode(), 0o600),
            FileToWrite(place.work / VARIABLES_NAME, json.dumps(variables).encode(), 0o600)))

    def result(self, config: DerivedConfig, finished: Finished) -> dict[str, Any]:
        return standard_result(config, finished)


def installed() -> AnsibleHook | None:
    command = shutil.which("ansible-playbook")
    return AnsibleHook(command) if command else None
