"""Ember itself on each cloud: ``openstack stack create/update/delete`` of the issue's template.

``ember dev`` runs with ``OS_CLIENT_CONFIG_FILE``/``OS_CLOUD`` naming the cloud under test
(so it starts no simulator of its own), and the real ``openstack`` client drives it: a
network, subnet, router with interface, security group, five servers with ports and
floating IPs, two volumes attached; an update resizes their flavor in place and an image
change replaces the one server that asks for it; the delete leaves the cloud as it was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from libs.resources.registry import default_registry
from tests.cloud.support import Cleanup, CloudUnderTest, Conn, until
from tests.integration.clients import Osc, ember_dev

if "OS::Nova::Server" not in default_registry().types():
    pytest.skip("the cloud resource types are not in this checkout", allow_module_level=True)

SERVERS = 5
STACK = "conformance-stack"  # what it makes is named after it: a dead run's leftovers are swept
ALT_IMAGE = "cirros-alt"
REPLACED = SERVERS - 1  # the server on its own port whose image change replaces it


def template() -> str:
    """The issue's stack: one network's worth of servers, each on its own port with a floating IP."""
    lines = [
        "heat_template_version: 2018-08-31",
        "parameters:",
        "  flavor: {type: string, default: m1.tiny}",
        "  image: {type: string, default: cirros}",
        "resources:",
        "  net: {type: OS::Neutron::Net}",
        "  subnet:",
        "    type: OS::Neutron::Subnet",
        "    properties: {network: {get_resource: net}, cidr: 10.96.0.0/24}",
        "  router:",
        "    type: OS::Neutron::Router",
        "    properties: {external_gateway_info: {network: public}}",
        "  iface:",
        "    type: OS::Neutron::RouterInterface",
        "    properties: {router: {get_resource: router}, subnet: {get_resource: subnet}}",
        "  sg:",
        "    type: OS::Neutron::SecurityGroup",
        "    properties: {rules: [{protocol: tcp, port_range_min: 22, port_range_max: 22}]}",
        "  solo:",
        "    type: OS::Nova::Server",
        "    depends_on: subnet",
        "    properties: {flavor: m1.tiny, image: {get_param: image}, image_update_policy: REPLACE,",
        "                 networks: [{network: {get_resource: net}}]}",
        # A floating IP named in the server's networks entry points at the port made for it.
        "  floater_ip:",
        "    type: OS::Neutron::FloatingIP",
        "    depends_on: iface",
        "    properties: {floating_network: public}",
        "  floater:",
        "    type: OS::Nova::Server",
        "    properties: {flavor: {get_param: flavor}, image: cirros,",
        "                 networks: [{subnet: {get_resource: subnet},",
        "                             floating_ip: {get_resource: floater_ip}}]}",
    ]
    for i in range(SERVERS):
        lines += [
            f"  port{i}:",
            "    type: OS::Neutron::Port",
            "    properties: {network: {get_resource: net}, security_groups: [{get_resource: sg}],",
            "                 fixed_ips: [{subnet: {get_resource: subnet}}]}",
            f"  server{i}:",
            "    type: OS::Nova::Server",
            # The last one is replaced on its own port: the old server frees it first (Heat's
            # prepare_for_replace), or Nova refuses the port to the new one.
            "    properties: {flavor: {get_param: flavor}, "
            + ("image: {get_param: image}, image_update_policy: REPLACE,"
               if i == REPLACED else "image: cirros,"),
            f"                 networks: [{{port: {{get_resource: port{i}}}}}]}}",
            f"  fip{i}:",
            "    type: OS::Neutron::FloatingIP",
            "    depends_on: iface",
            f"    properties: {{floating_network: public, port_id: {{get_resource: port{i}}}}}",
        ]
    for i in range(2):
        lines += [
            f"  volume{i}: {{type: OS::Cinder::Volume, properties: {{size: 1}}}}",
            f"  attachment{i}:",
            "    type: OS::Cinder::VolumeAttachment",
            f"    properties: {{instance_uuid: {{get_resource: server{i}}},",
            f"                 volume_id: {{get_resource: volume{i}}}}}",
        ]
    lines += ["outputs:", "  address: {value: {get_attr: [server0, first_address]}}",
              "  floating: {value: {get_attr: [fip0, floating_ip_address]}}"]
    return "\n".join(lines) + "\n"


def what_the_project_holds(conn: Conn) -> dict[str, set[str]]:
    return {
        "servers": {s.id for s in conn.compute.servers()},
        "volumes": {v.id for v in conn.block_storage.volumes()},
        "networks": {n.id for n in conn.network.networks(project_id=conn.current_project_id)},
        "routers": {r.id for r in conn.network.routers()},
        "ports": {p.id for p in conn.network.ports(project_id=conn.current_project_id)},
        "floating ips": {f.id for f in conn.network.ips(project_id=conn.current_project_id)},
        "security groups": {g.id for g in conn.network.security_groups(project_id=conn.current_project_id)},
        "security group rules": {r.id for r in conn.network.security_group_rules(
            project_id=conn.current_project_id)},
        "subnets": {s.id for s in conn.network.subnets(project_id=conn.current_project_id)},
        "keypairs": {k.name for k in conn.compute.keypairs()},
        "server groups": {g.id for g in conn.compute.server_groups()},
    }


@pytest.fixture
def alt_image(cloud: CloudUnderTest, cleanup: Cleanup) -> str:
    admin = cloud.connect(admin=True)
    found = admin.image.find_image(ALT_IMAGE)
    if found is None:
        found = admin.image.create_image(ALT_IMAGE, data=bytes(4096), disk_format="raw",
                                         container_format="bare", visibility="public")
        cleanup.add("image", lambda: admin.image.delete_image(found.id, ignore_missing=True))
    return str(found.id)


@pytest.fixture
def workdir(tmp_path: Path) -> Iterator[Path]:
    tmp_path.chmod(0o755)
    (tmp_path / "stack.yaml").write_text(template())
    yield tmp_path


def _servers_of(conn: Conn, stack: str) -> dict[str, Any]:
    return {s.name: s for s in conn.compute.servers(details=True) if s.name.startswith(f"{stack}-")}


def _replaced(made: dict[str, Any], after: dict[str, Any], label: str) -> tuple[Any, Any]:
    """The server named after ``label`` before and after the update."""
    return (next(s for name, s in made.items() if f"-{label}-" in name),
            next(s for name, s in after.items() if f"-{label}-" in name))


# What a token looks like: the simulator's (base64 JSON, then a MAC) and Keystone's Fernet tokens.
TOKEN_SHAPE = re.compile(r"\b(?:WyI|gAAAAA)[A-Za-z0-9_=-]{20,}")


def _secrets(cloud: CloudUnderTest, conn: Conn) -> set[str]:
    """The passwords of the cloud's clouds.yaml and a token of the member's."""
    clouds = yaml.safe_load(cloud.clouds_yaml.read_text())["clouds"]
    found = {str(entry["auth"]["password"]) for entry in clouds.values()
             if entry.get("auth", {}).get("password")}
    return found | {str(conn.auth_token)}


def _assert_no_secret(where: str, text: str, secrets: set[str]) -> None:
    leaked = [s for s in secrets if s in text]
    assert not leaked, f"{where} shows a credential"
    assert TOKEN_SHAPE.search(text) is None, f"{where} shows a token: {TOKEN_SHAPE.search(text)}"


@pytest.mark.slow_ci  # about 36 s on the simulator too; tests/integration covers its parts in ./test.sh
def test_stack_of_servers_ports_floating_ips_and_volumes(
        cloud: CloudUnderTest, conn: Conn, ember_env: dict[str, str], workdir: Path, alt_image: str) -> None:
    before = what_the_project_holds(conn)
    env = {**ember_env, "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml), "OS_CLOUD": cloud.member}
    with ember_dev(env, workdir, log_level="DEBUG") as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        osc.run("stack", "create", "--wait", "-t", "stack.yaml", STACK)
        assert osc.json("stack", "show", STACK)["stack_status"] == "CREATE_COMPLETE"
        made = _servers_of(conn, STACK)
        assert len(made) == SERVERS + 2 and {s.status for s in made.values()} == {"ACTIVE"}
        volumes = [v for v in conn.block_storage.volumes() if v.id not in before["volumes"]]
        assert sorted(v.status for v in volumes) == ["in-use", "in-use"]
        floating = osc.json("stack", "output", "show", STACK, "floating")["output_value"]
        assert floating.startswith("172.24.4.")
        (floater,) = (server for name, server in made.items() if "-floater-" in name)
        fip_id = json.loads(osc.run("stack", "resource", "show", "-f", "json", STACK, "floater_ip").stdout
                            )["physical_resource_id"]
        assert conn.network.get_port(conn.network.get_ip(fip_id).port_id).device_id == floater.id

        osc.run("stack", "update", "--wait", "-t", "stack.yaml", "--parameter", "flavor=m1.small",
                "--parameter", f"image={ALT_IMAGE}", STACK)
        shown = [osc.run("stack", "show", "-f", "json", STACK).stdout]
        assert json.loads(shown[-1])["stack_status"] == "UPDATE_COMPLETE"
        after = _servers_of(conn, STACK)
        assert len(after) == SERVERS + 2
        replaced = {"solo", f"server{REPLACED}"}
        for label in replaced:
            old, new = _replaced(made, after, label)
            assert new.id != old.id and new.image["id"] == alt_image and new.status == "ACTIVE", label
        # The replacement on its own port has it (and its floating IP) back.
        _, new = _replaced(made, after, f"server{REPLACED}")
        for name in (f"server{REPLACED}", f"port{REPLACED}", f"fip{REPLACED}"):
            shown.append(osc.run("stack", "resource", "show", "-f", "json", STACK, name).stdout)
        port_id, fip_id = (json.loads(text)["physical_resource_id"] for text in shown[-2:])
        assert conn.network.get_port(port_id).device_id == new.id
        assert conn.network.get_ip(fip_id).port_id == port_id
        # The others are resized in place (flavor_update_policy RESIZE): the same servers.
        resized = {s.id: s.flavor["original_name"] for name, s in after.items()
                   if not any(f"-{label}-" in name for label in replaced)}
        assert set(resized) == {s.id for name, s in made.items()
                                if not any(f"-{label}-" in name for label in replaced)}
        assert set(resized.values()) == {"m1.small"}

        # Heat's reasons in the events; no credential in them nor in what the api shows.
        shown.append(osc.run("stack", "event", "list", "-f", "json", STACK).stdout)
        reasons = {(e["resource_name"], e["resource_status"], e["resource_status_reason"])
                   for e in json.loads(shown[-1])}
        assert {(STACK, "CREATE_COMPLETE", "Stack CREATE completed successfully"),
                (STACK, "UPDATE_COMPLETE", "Stack UPDATE completed successfully"),
                ("server0", "CREATE_COMPLETE", "state changed"),
                ("server0", "UPDATE_COMPLETE", "state changed")} <= reasons, sorted(reasons)
        secrets = _secrets(cloud, conn)
        _assert_no_secret("what the api shows", "\n".join(shown), secrets)

        osc.run("stack", "delete", "--yes", "--wait", STACK)
        until(lambda: what_the_project_holds(conn) == before, what="the cloud as it was", timeout=60)
    # The services' logs and spans: dev's own log, and what each service wrote under its data directory.
    for log in [workdir / "dev.log", *sorted((workdir / "data" / "logs").glob("*"))]:
        _assert_no_secret(f"the log {log.name}", log.read_text(errors="replace"), secrets)
