"""By hand: create and delete unmodified server templates of openstack/heat-templates on the simulator.

    .venv/bin/python scripts/heat_templates_on_simcloud.py /path/to/heat-templates [--data-dir DIR]

The checkout may be a work tree or a bare git directory (its ``HEAD`` is read).
With ``--data-dir`` naming a running ``ember dev``'s data directory (its
``clouds.yaml`` and API are used, ``--api-url`` if not the default), else a
fresh ``ember dev`` is started in a temporary directory and stopped at the end.
Each template is created with what a devstack user would pass (a keypair made
for the run, ``cirros``, ``m1.small``, ``public``, ``private``), waited for
until CREATE_COMPLETE, its outputs shown, deleted, and the cloud compared, by
openstacksdk, with what it held before. Prints one table row per template; the
exit status is 1 when any row failed. No template text is part of this
project: it needs a checkout that is not ours to commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openstack
from openstack.config.loader import OpenStackConfig
from openstack.connection import Connection

from libs.embedded.process import free_port

PROJECT = "demo"  # the Ember project (noauth): its cloud calls go to clouds.yaml's `simcloud`
CLOUD = "simcloud"
KEY_NAME = "heat-templates-run"
SETTLE_SECONDS = 300.0


@dataclasses.dataclass(frozen=True)
class Cloud:
    """What a devstack user looks up before passing parameters."""

    public_net_id: str
    private_net_id: str
    private_subnet_id: str


def _base(cloud: Cloud) -> dict[str, str]:
    return {"key_name": KEY_NAME, "image": "cirros", "flavor": "m1.small"}


SOFTWARE_CONFIG = "hot/software-config/example-templates"


@dataclasses.dataclass(frozen=True)
class Case:
    path: str
    parameters: Callable[[Cloud], dict[str, str]]
    # Images the template insists on by name (allowed_values): uploaded for the run, as a user would.
    images: tuple[str, ...] = ()
    # Files its get_file reads, beside it: sent in the request's `files`, as the client sends them.
    files: tuple[str, ...] = ()


CASES = (
    Case("hot/hello_world.yaml", lambda c: {**_base(c), "admin_pass": "Passw0rd"}),
    Case("hot/server_console.yaml", lambda c: {"image": "cirros", "flavor": "m1.small"}),
    Case("hot/vm_with_cinder.yaml", lambda c: {**_base(c), "network": "private"}),
    Case("hot/servers_in_new_neutron_net.yaml", lambda c: {
        **_base(c), "public_net": "public", "private_net_name": "heat-net",
        "private_net_cidr": "10.10.0.0/24", "private_net_gateway": "10.10.0.1",
        "private_net_pool_start": "10.10.0.10", "private_net_pool_end": "10.10.0.100"}),
    Case("hot/servers_in_existing_neutron_net.yaml", lambda c: {
        **_base(c), "public_net_id": c.public_net_id, "private_net_id": c.private_net_id,
        "private_subnet_id": c.private_subnet_id}),
    Case("hot/servers_in_existing_neutron_network_no_floating_ips.yaml", lambda c: {
        **_base(c), "net_id": c.private_net_id, "subnet_id": c.private_subnet_id}),
    Case("hot/F20/WordPress_Native.yaml", lambda c: {
        "key_name": KEY_NAME, "image_id": "cirros", "instance_type": "m1.small"}),
    Case("hot/F18/NovaInstanceWithCinderVolume_Native.yaml", lambda c: {
        "key_name": KEY_NAME, "image_id": "F18-x86_64-cfntools", "instance_type": "m1.small"},
         images=("F18-x86_64-cfntools",)),
    # Software config (the script group): the simulator runs an agent per server booted for it,
    # so each deployment completes only once its script really ran and signalled.
    Case(f"{SOFTWARE_CONFIG}/example-script-template.yaml", _base,
         files=("config-scripts/example-script.sh",)),
    Case(f"{SOFTWARE_CONFIG}/example-deploy-sequence.yaml", _base),
    Case(f"{SOFTWARE_CONFIG}/example-sw-component-template.yaml", _base),
)


@dataclasses.dataclass(frozen=True)
class Row:
    template: str
    result: str  # "ok" or what failed
    outputs: str = ""
    seconds: float = 0.0


# -- the checkout ---------------------------------------------------------------------------------

def read_template(checkout: Path, path: str) -> str:
    """A file of a work tree, or of a bare git directory's HEAD."""
    if (checkout / "objects").is_dir() and (checkout / "HEAD").is_file():
        return subprocess.run(["git", f"--git-dir={checkout}", "show", f"HEAD:{path}"],
                              check=True, capture_output=True, text=True).stdout
    return (checkout / path).read_text()


# -- the Ember API --------------------------------------------------------------------------------

class ApiFault(Exception):
    pass


def _call(api: str, method: str, path: str, body: object | None = None) -> Any:
    """The answer's JSON (None for no content or a 404); a fault raises with Heat's message."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(f"{api}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw = response.read()
            return json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return None
        text = exc.read().decode(errors="replace")
        try:
            raise ApiFault(str(json.loads(text)["error"]["message"])) from None
        except (ValueError, KeyError, TypeError):
            raise ApiFault(f"{exc.code}: {text[:300]}") from None


def _settled(api: str, path: str, deadline: float) -> dict[str, Any] | None:
    """The stack once no action is in progress (None: gone)."""
    while True:
        found = _call(api, "GET", path)
        if found is None:
            return None
        stack: dict[str, Any] = found["stack"]
        if not str(stack["stack_status"]).endswith("IN_PROGRESS"):
            return stack
        if time.monotonic() > deadline:
            raise ApiFault(f"still {stack['stack_status']} after {SETTLE_SECONDS:.0f}s")
        time.sleep(0.5)


def _outputs(stack: Mapping[str, Any]) -> str:
    shown = []
    for output in stack.get("outputs") or []:
        value = output.get("output_value", output.get("output_error"))
        shown.append(f"{output['output_key']}={json.dumps(value)}")
    return "; ".join(shown)


# -- the cloud ------------------------------------------------------------------------------------

def connect(clouds_yaml: Path) -> Connection:
    return Connection(config=OpenStackConfig(config_files=[str(clouds_yaml)]).get_one(CLOUD))


def inventory(conn: Connection) -> dict[str, frozenset[str]]:
    """The ids of everything a template here can make, by kind."""
    listings: dict[str, Callable[[], Iterator[Any]]] = {
        "servers": conn.compute.servers, "keypairs": conn.compute.keypairs,
        "volumes": conn.block_storage.volumes, "networks": conn.network.networks,
        "subnets": conn.network.subnets, "ports": conn.network.ports, "routers": conn.network.routers,
        "floating_ips": conn.network.ips, "security_groups": conn.network.security_groups}
    return {kind: frozenset(str(item.id) for item in listed()) for kind, listed in listings.items()}


def difference(before: Mapping[str, frozenset[str]], after: Mapping[str, frozenset[str]]) -> str:
    """What the run left behind or took away, by kind ("" when the cloud is as before)."""
    parts = []
    for kind in before:
        left, gone = after[kind] - before[kind], before[kind] - after[kind]
        if left:
            parts.append(f"{len(left)} {kind} left")
        if gone:
            parts.append(f"{len(gone)} {kind} gone")
    return ", ".join(parts)


def look_up(conn: Connection) -> Cloud:
    public = conn.network.find_network("public", ignore_missing=False)
    private = conn.network.find_network("private", ignore_missing=False)
    subnet = conn.network.find_subnet("private-subnet", ignore_missing=False)
    return Cloud(str(public.id), str(private.id), str(subnet.id))


# -- one template ---------------------------------------------------------------------------------

def run_case(api: str, conn: Connection, checkout: Path, case: Case, cloud: Cloud) -> Row:
    started = time.monotonic()
    name = "ht-" + Path(case.path).stem.replace("_", "-")[:40]
    before = inventory(conn)
    try:
        template = read_template(checkout, case.path)
        folder = str(Path(case.path).parent)
        files = {f: read_template(checkout, f"{folder}/{f}") for f in case.files}
        created = _call(api, "POST", f"/v1/{PROJECT}/stacks", {
            "stack_name": name, "template": template, "parameters": case.parameters(cloud),
            "files": files, "timeout_mins": 10, "disable_rollback": True})
        path = f"/v1/{PROJECT}/stacks/{name}/{created['stack']['id']}"
        stack = _settled(api, path, time.monotonic() + SETTLE_SECONDS)
        if stack is None or stack["stack_status"] != "CREATE_COMPLETE":
            reason = "" if stack is None else f"{stack['stack_status']}: {stack.get('stack_status_reason')}"
            _call(api, "DELETE", path)
            _settled(api, path, time.monotonic() + SETTLE_SECONDS)
            return Row(case.path, f"create: {reason}"[:300], seconds=time.monotonic() - started)
        shown = _outputs(stack)
        _call(api, "DELETE", path)
        gone = _settled(api, path, time.monotonic() + SETTLE_SECONDS)
        if gone is not None and gone["stack_status"] != "DELETE_COMPLETE":
            return Row(case.path, f"delete: {gone['stack_status']}: {gone.get('stack_status_reason')}",
                       shown, time.monotonic() - started)
        left = difference(before, inventory(conn))
        return Row(case.path, f"cloud not as before: {left}" if left else "ok", shown,
                   time.monotonic() - started)
    except (ApiFault, subprocess.CalledProcessError, OSError, openstack.exceptions.SDKException) as exc:
        return Row(case.path, f"{type(exc).__name__}: {exc}"[:300], seconds=time.monotonic() - started)


def table(rows: list[Row]) -> str:
    lines = ["| template | create, outputs, delete, cloud as before | seconds |", "|---|---|---|"]
    lines += [f"| {r.template} | {r.result} | {r.seconds:.1f} |" for r in rows]
    return "\n".join(lines)


# -- ember dev ------------------------------------------------------------------------------------

def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


@contextmanager
def ember_dev(data_dir: Path | None, api_url: str) -> Iterator[tuple[str, Path]]:
    """(API URL, clouds.yaml) of the running ``ember dev`` named, else of one started here."""
    if data_dir is not None:
        yield api_url, data_dir / "clouds.yaml"
        return
    base = Path(tempfile.mkdtemp(prefix="ember-heat-templates-"))
    # The simulated servers' folders are under it, and their agents run scripts as an unprivileged
    # user (nobody, when this runs as root), who must be able to pass through.
    base.chmod(0o711)
    api = f"http://127.0.0.1:{free_port()}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EMBER_", "OS_"))}
    env.update({"EMBER_DATA_DIR": str(base / "data"), "EMBER_API_BIND": api.removeprefix("http://")})
    log = (base / "dev.log").open("ab")
    proc = subprocess.Popen([sys.executable, "-m", "libs.cli", "dev"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        clouds_yaml = base / "data" / "clouds.yaml"
        while not ("Ember is running." in (base / "dev.log").read_text(errors="replace")
                   and clouds_yaml.exists() and _answers(f"{api}/")):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"ember dev did not start; its log: {base / 'dev.log'}")
            time.sleep(0.3)
        yield api, clouds_yaml
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        if proc.returncode == 0:
            shutil.rmtree(base, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("checkout", type=Path, help="heat-templates: a work tree or a bare git directory")
    parser.add_argument("--data-dir", type=Path, help="a running `ember dev`'s data directory")
    parser.add_argument("--api-url", default="http://127.0.0.1:8004")
    parser.add_argument("--only", action="append", default=[], help="a template path (repeatable)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if not args.only or c.path in args.only]
    with ember_dev(args.data_dir, args.api_url) as (api, clouds_yaml):
        conn = connect(clouds_yaml)
        made = conn.compute.find_keypair(KEY_NAME) is None
        if made:
            conn.compute.create_keypair(name=KEY_NAME)
        uploaded: list[str] = []
        for image in sorted({i for c in cases for i in c.images}):
            if conn.image.find_image(image) is None:
                uploaded.append(str(conn.image.create_image(
                    name=image, disk_format="qcow2", container_format="bare", data=b"not a real disk").id))
        try:
            cloud = look_up(conn)
            rows = []
            for case in cases:
                rows.append(run_case(api, conn, args.checkout, case, cloud))
                print(f"{case.path}: {rows[-1].result}", file=sys.stderr, flush=True)
                if rows[-1].outputs:
                    print(f"    outputs: {rows[-1].outputs}", file=sys.stderr, flush=True)
        finally:
            if made:
                conn.compute.delete_keypair(KEY_NAME, ignore_missing=True)
            for made_image in uploaded:
                conn.image.delete_image(made_image, ignore_missing=True)
    print(table(rows))
    return 0 if all(r.result == "ok" for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
