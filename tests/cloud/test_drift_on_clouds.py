"""Drift on each cloud: what an operator changes behind Ember's back is seen and, under heal, undone.

``ember dev`` (its observer included) runs on the cloud under test with heal as the
installation's drift policy (``EMBER_DRIFT_POLICY``: python-heatclient refuses an environment
file with a section it does not know, so the ``openstack`` client cannot send a ``convergence``
section), and the real ``openstack`` client makes a stack: a server on its own port. Then,
through openstacksdk as an operator would: the port renamed, which is reported per field and put
back; the server deleted, which is reported and made again on its port. Both records are read
from Ember's drift route; the delete leaves the cloud as it was.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from libs.resources.registry import default_registry
from tests.cloud.support import CloudUnderTest, Conn, until
from tests.cloud.test_stacks_on_clouds import what_the_project_holds
from tests.integration.clients import Osc, ember_dev

if "OS::Nova::Server" not in default_registry().types():
    pytest.skip("the cloud resource types are not in this checkout", allow_module_level=True)

STACK = "conformance-drift"  # what it makes is named after it: a dead run's leftovers are swept
PORT_NAME = "conformance-drift-port"
TEMPLATE = f"""heat_template_version: 2018-08-31
resources:
  net: {{type: OS::Neutron::Net}}
  subnet:
    type: OS::Neutron::Subnet
    properties: {{network: {{get_resource: net}}, cidr: 10.97.0.0/24}}
  port:
    type: OS::Neutron::Port
    properties:
      network: {{get_resource: net}}
      name: {PORT_NAME}
      fixed_ips: [{{subnet: {{get_resource: subnet}}}}]
  web:
    type: OS::Nova::Server
    properties: {{flavor: m1.tiny, image: cirros, networks: [{{port: {{get_resource: port}}}}]}}
"""


def _drift(url: str, stack_id: str) -> list[dict[str, Any]]:
    with urllib.request.urlopen(f"{url}/v1/demo/stacks/{STACK}/{stack_id}/drift", timeout=10) as answer:
        records: list[dict[str, Any]] = json.load(answer)["drift"]
        return records


@pytest.mark.slow_ci  # about 40 s even on the simulator; tests/integration/test_observer.py in ./test.sh
def test_drift_is_seen_and_healed(cloud: CloudUnderTest, conn: Conn, ember_env: dict[str, str],
                                  tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    (tmp_path / "stack.yaml").write_text(TEMPLATE)
    before = what_the_project_holds(conn)
    env = {**ember_env, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml), "OS_CLOUD": cloud.member,
           "EMBER_OBSERVE_INTERVAL": "2", "EMBER_DRIFT_POLICY": "heal"}
    with ember_dev(env, tmp_path, log_level="DEBUG") as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, tmp_path)
        osc.run("stack", "create", "--wait", "-t", "stack.yaml", STACK)
        stack_id = osc.json("stack", "show", STACK)["id"]

        def physical(name: str) -> str:
            return str(osc.json("stack", "resource", "show", STACK, name)["physical_resource_id"])
        port_id, server_id = physical("port"), physical("web")

        # A field changed by hand: reported as that field, and put back.
        conn.network.update_port(port_id, name="renamed-by-hand")
        until(lambda: conn.network.get_port(port_id).name == PORT_NAME, what="the port's name put back")
        [renamed] = until(lambda: [r for r in _drift(url, stack_id) if r["resolved_at"]],
                          what="the rename's record closed")
        assert (renamed["resource_name"], renamed["kind"], renamed["fields"], renamed["action_taken"]) == (
            "port", "changed", ["name"], "healed")
        until(lambda: osc.json("stack", "show", STACK)["stack_status"] == "UPDATE_COMPLETE",
              what="the heal's update ended")

        # The server deleted: made again on the template's port.
        conn.compute.delete_server(server_id)
        until(lambda: physical("web") != server_id, what="the server made again")
        until(lambda: osc.json("stack", "show", STACK)["stack_status"] == "UPDATE_COMPLETE"
              and conn.compute.get_server(physical("web")).status == "ACTIVE", what="the heal ended")
        remade = physical("web")
        assert conn.network.get_port(port_id).device_id == remade
        gone = until(lambda: [r for r in _drift(url, stack_id) if r["kind"] == "gone" and r["resolved_at"]],
                     what="the loss's record closed")
        assert [(r["resource_name"], r["action_taken"]) for r in gone] == [("web", "healed")]

        osc.run("stack", "delete", "--yes", "--wait", STACK)
        until(lambda: what_the_project_holds(conn) == before, what="the cloud as it was", timeout=60)
