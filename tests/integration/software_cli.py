"""One session of ``openstack software config|deployment ...`` commands, as a transcript to compare.

The same session runs against real Heat (``scripts/heat_reference/record_software_cli.py`` keeps
its transcript in ``data/software_cli_heat.json``) and against Ember (the test compares). What
differs between any two runs (ids, times) is normalized away, as in the parity cases.

``software config create`` is not in it: the client validates a template holding an
``OS::Heat::SoftwareConfig`` first, which a Heat without a Keystone catalog refuses.
"""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

from tests.heat_parity.cases import normalize
from tests.integration.clients import Osc

HEAT_TRANSCRIPT = Path(__file__).parent / "data" / "software_cli_heat.json"
CONFIG = {"name": "cli-config", "group": "script", "config": "#!/bin/sh\necho hello $word\n",
          "inputs": [{"name": "word", "default": "world"}], "outputs": [{"name": "result"}]}
_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def api(endpoint: str, method: str, path: str, body: Any = None) -> Any:
    """A request to the orchestration endpoint (``.../v1/<project>``), as a program (or an agent) sends it."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{endpoint}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json", "X-Auth-Token": "t"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read()
    return json.loads(text) if text else None


def _said(osc: Osc, *args: str) -> dict[str, Any]:
    done = osc.run(*args, ok=False)
    # Lines a client plugin missing from one venv writes there, whatever the server.
    errors = [line for line in done.stderr.splitlines() if line and not line.startswith("Could not load")]
    return {"command": normalize(" ".join(args)), "code": done.returncode, "stdout": normalize(done.stdout),
            "stderr": normalize("\n".join(errors))}


def session(osc: Osc, endpoint: str) -> list[dict[str, Any]]:
    """The commands and what each printed; the project must hold no config or deployment before."""
    config_id = api(endpoint, "POST", "/software_configs", CONFIG)["software_config"]["id"]
    out = [_said(osc, "software", "config", "list"),
           _said(osc, "software", "config", "show", config_id),
           _said(osc, "software", "config", "show", "--config-only", config_id)]
    created = _said(osc, "software", "deployment", "create", "--config", config_id, "--server", "web-1",
                    "--signal-transport", "NO_SIGNAL", "--input-value", "word=there", "deploy-one",
                    "-f", "json")
    out.append(created)
    deployment_id = osc.json("software", "deployment", "list", "--server", "web-1")[0]["id"]
    shown = api(endpoint, "GET", f"/software_deployments/{deployment_id}")["software_deployment"]
    derived_id = shown["config_id"]
    out += [_said(osc, "software", "deployment", "list", "-f", "json"),
            _said(osc, "software", "deployment", "list", "--server", "web-1", "--long", "-f", "json"),
            _said(osc, "software", "deployment", "list", "--server", "web-2"),
            _said(osc, "software", "deployment", "show", deployment_id),
            _said(osc, "software", "deployment", "metadata", "show", "web-1"),
            _said(osc, "software", "deployment", "output", "show", deployment_id, "result")]
    # What an agent's signal leaves: its outputs, and the deployment complete.
    api(endpoint, "PUT", f"/software_deployments/{deployment_id}",
        {"output_values": {"result": "hello there", "deploy_stdout": "hello there\n", "deploy_stderr": "",
                           "deploy_status_code": 0},
         "status": "COMPLETE", "status_reason": "Outputs received"})
    out += [_said(osc, "software", "deployment", "show", "--long", deployment_id),
            _said(osc, "software", "deployment", "output", "show", deployment_id, "result"),
            _said(osc, "software", "deployment", "output", "show", deployment_id, "--all", "--long"),
            _said(osc, "software", "deployment", "output", "show", deployment_id, "nothing"),
            _said(osc, "software", "config", "delete", config_id, derived_id),
            _said(osc, "software", "deployment", "delete", deployment_id),
            _said(osc, "software", "deployment", "show", deployment_id),
            _said(osc, "software", "deployment", "delete", deployment_id),
            _said(osc, "software", "config", "show", derived_id),
            _said(osc, "software", "config", "delete", config_id),
            _said(osc, "software", "config", "delete", config_id),
            _said(osc, "software", "config", "list"),
            _said(osc, "software", "deployment", "metadata", "show", "web-1")]
    return out


def ids_in(transcript: list[dict[str, Any]]) -> bool:
    """Whether an id escaped normalization (a transcript must not depend on the run)."""
    return any(_ID.search(json.dumps(step)) for step in transcript)
