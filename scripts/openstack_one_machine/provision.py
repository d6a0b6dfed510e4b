"""Configs, databases and schema: each step done once and stamped, so a second setup is quick.

A stamp holds what its step was done for (the lock's fingerprint and the layout);
``drop`` removes the databases and the stamps together.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from scripts.openstack_one_machine import configs, install
from scripts.openstack_one_machine.credentials import Credentials
from scripts.openstack_one_machine.layout import DATABASES, REGION, Api, Layout, keystone_url

HERE = Path(__file__).resolve().parent


def write_configs(layout: Layout, creds: Credentials) -> None:
    for path, text in configs.files(layout, creds).items():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(text)
    shipped = layout.venv / "etc"
    for source, target in configs.PASTE_FILES.items():
        shutil.copyfile(shipped / source, layout.etc / target)
    for api in Api:
        (layout.state / api.value / "lock").mkdir(parents=True, exist_ok=True)


def _run(layout: Layout, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
    """Run one of the venv's commands, its output to logs/setup.log; raise with the log's tail."""
    layout.logs.mkdir(parents=True, exist_ok=True)
    log_path = layout.logs / "setup.log"
    with log_path.open("ab") as log:
        log.write(f"$ {' '.join(argv)}\n".encode())
        log.flush()
        result = subprocess.run(
            [str(layout.bin / argv[0]), *argv[1:]], stdout=log, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})}, cwd=layout.data, check=False,
        )
    if result.returncode != 0:
        tail = log_path.read_text(errors="replace").splitlines()[-25:]
        raise RuntimeError(f"{argv[0]} {argv[1] if len(argv) > 1 else ''} failed:\n" + "\n".join(tail))


def _mysql(layout: Layout, verb: str, names: Sequence[str]) -> None:
    subprocess.run([str(layout.python), str(HERE / "mysql_admin.py"), verb, layout.mysql, *names], check=True)


def _stamp_value(layout: Layout, creds: Credentials, api: Api) -> str:
    text = install.LOCK.read_text() + repr(layout) + repr(sorted(creds.passwords.items())) + api.value
    digest = hashlib.sha256(text.encode())
    return digest.hexdigest()


def _stamped(layout: Layout, creds: Credentials, api: Api) -> bool:
    stamp = layout.stamps / f"db-{api.value}"
    return stamp.exists() and stamp.read_text() == _stamp_value(layout, creds, api)


def _stamp(layout: Layout, creds: Credentials, api: Api) -> None:
    layout.stamps.mkdir(parents=True, exist_ok=True)
    (layout.stamps / f"db-{api.value}").write_text(_stamp_value(layout, creds, api))


def _conf(layout: Layout, *parts: str) -> str:
    return str(layout.etc.joinpath(*parts))


def _sync_keystone(layout: Layout, creds: Credentials) -> None:
    conf = ("--config-file", _conf(layout, "keystone", "keystone.conf"))
    _run(layout, ["keystone-manage", *conf, "db_sync"])
    ids = ("--keystone-user", "root", "--keystone-group", "root")
    if not (layout.state / "keystone" / "fernet-keys" / "0").exists():
        _run(layout, ["keystone-manage", *conf, "fernet_setup", *ids])
    if not (layout.state / "keystone" / "credential-keys" / "0").exists():
        _run(layout, ["keystone-manage", *conf, "credential_setup", *ids])
    endpoint = keystone_url()
    _run(layout, ["keystone-manage", *conf, "bootstrap", "--bootstrap-username", "admin",
                  "--bootstrap-project-name", "admin", "--bootstrap-role-name", "admin",
                  "--bootstrap-admin-url", endpoint, "--bootstrap-public-url", endpoint,
                  "--bootstrap-internal-url", endpoint, "--bootstrap-region-id", REGION],
         env={"OS_BOOTSTRAP_PASSWORD": creds.password("admin")})


def _sync_nova(layout: Layout) -> None:
    conf = ("--config-file", _conf(layout, "nova", "nova.conf"))
    _run(layout, ["nova-manage", *conf, "api_db", "sync"])
    cell0 = layout.db_url("nova_cell0")
    _run(layout, ["nova-manage", *conf, "cell_v2", "map_cell0", "--database_connection", cell0])
    listing = subprocess.run(
        [str(layout.bin / "nova-manage"), *conf, "cell_v2", "list_cells"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    if " cell1 " not in listing.stdout:
        _run(layout, ["nova-manage", *conf, "cell_v2", "create_cell", "--name", "cell1"])
    _run(layout, ["nova-manage", *conf, "db", "sync"])


def _sync(layout: Layout, creds: Credentials, api: Api) -> None:
    if api is Api.KEYSTONE:
        _sync_keystone(layout, creds)
    elif api is Api.GLANCE:
        _run(layout, ["glance-manage", "--config-file", _conf(layout, "glance", "glance-api.conf"),
                      "db_sync"])
    elif api is Api.PLACEMENT:
        _run(layout, ["placement-manage", "--config-file", _conf(layout, "placement", "placement.conf"),
                      "db", "sync"])
    elif api is Api.NOVA:
        _sync_nova(layout)
    elif api is Api.NEUTRON:
        _run(layout, ["neutron-db-manage", "--config-file", _conf(layout, "neutron", "neutron.conf"),
                      "--config-file", _conf(layout, "neutron", "plugins", "ml2", "ml2_conf.ini"),
                      "upgrade", "heads"])
    elif api is Api.CINDER:
        _run(layout, ["cinder-manage", "--config-file", _conf(layout, "cinder", "cinder.conf"), "db", "sync"])


def sync_databases(layout: Layout, creds: Credentials) -> list[Api]:
    """Create the prefixed databases and bring each service's schema up; the services synced now."""
    _mysql(layout, "create", layout.all_databases())
    todo = [api for api in DATABASES if not _stamped(layout, creds, api)]
    # Two at a time: each sync is mostly one CPU of Python imports and alembic.
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {api: pool.submit(_sync, layout, creds, api) for api in todo}
        for api, future in futures.items():
            future.result()
            _stamp(layout, creds, api)
    return todo


def drop(layout: Layout) -> list[str]:
    """Drop the cloud's databases (only its own prefixed names) and forget the stamps."""
    names = layout.all_databases()
    if layout.python.exists():
        _mysql(layout, "drop", names)
    for api in Api:
        (layout.stamps / f"db-{api.value}").unlink(missing_ok=True)
    # Servers and volumes live only in the fakes' memory and in these files: go with the rows.
    shutil.rmtree(layout.state, ignore_errors=True)
    return names
