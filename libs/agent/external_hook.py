"""A hook that is an executable of the hooks folder, spoken to as heat-config speaks to its hooks.

It gets the config as JSON on stdin and prints the result as a JSON object on
stdout. Output that is not such an object (a hook that crashed) is reported
as heat-config reports it: the hook's stdout, stderr and exit code.
Heat's hooks keep their files under ``/var/lib/heat-config`` unless told
otherwise; their variables point them at the run's own folder instead, which
the unprivileged user may write.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from libs.agent.configs import DerivedConfig
from libs.agent.hooks import Finished, Launch, Place


class ExternalHook:
    def __init__(self, path: Path) -> None:
        self.path = path

    def launch(self, config: DerivedConfig, place: Place) -> Launch:
        env = place.environment
        for kind in ("SCRIPT", "ANSIBLE", "PUPPET", "SALT", "CHEF"):
            env[f"HEAT_{kind}_WORKING"] = str(place.work)
            env[f"HEAT_{kind}_OUTPUTS"] = str(place.work / "outputs")
        return Launch(argv=(str(self.path),), env=env, stdin=json.dumps(dict(config.document)).encode())

    def result(self, config: DerivedConfig, finished: Finished) -> dict[str, Any]:
        try:
            said = json.loads(finished.stdout) if finished.stdout.strip() else None
        except ValueError:
            said = None
        if isinstance(said, dict):
            return said
        return {"deploy_stdout": finished.stdout, "deploy_stderr": finished.stderr,
                "deploy_status_code": finished.exit_code}
