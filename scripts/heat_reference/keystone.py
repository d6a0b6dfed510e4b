"""Keystone mode of the reference Heat: its settings for the one-machine OpenStack.

``scripts/openstack_one_machine`` runs real Keystone, Nova, Neutron, Glance and Cinder; this writes
``$HEAT_REF_DIR/keystone.conf`` (0600: it holds the admin password) so that a Heat started with
``launch.py --keystone`` checks tokens with that Keystone (keystonemiddleware), reaches the services
through the token's catalog and keeps trusts for deferred operations. Run with Ember's venv::

    .venv/bin/python -m scripts.heat_reference.keystone          # write keystone.conf
    .venv/bin/python -m scripts.heat_reference.keystone --remove # remove it

Heat's service user (keystonemiddleware's and the trustee) is the cloud's ``admin``; stacks are the
callers' (``demo`` in project ``demo`` when recording, see ``record.py --keystone``). Trusts delegate
the role ``member``, which the one-machine cloud gives ``demo``. No ``stack_user_domain``: none of the
types the cloud cases use makes stack users.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from scripts.openstack_one_machine.credentials import load_or_make
from scripts.openstack_one_machine.layout import REGION, from_env, keystone_url

# Never started: Heat only writes these into servers' user data (HEAT_CFNTOOLS), as devstack's do.
CFN_URL = "http://127.0.0.1:8000"


def conf_text(admin_password: str) -> str:
    identity = keystone_url()
    service_user = "\n".join((
        "auth_type = password",
        f"auth_url = {identity}",
        "username = admin",
        f"password = {admin_password}",
        "user_domain_name = Default",
    ))
    return f"""# Written by scripts/heat_reference/keystone.py; read by launch.py --keystone only.
[DEFAULT]
keystone_backend = heat.engine.clients.os.keystone.heat_keystoneclient.KsClientWrapper
deferred_auth_method = trusts
trusts_delegated_roles = member
region_name_for_services = {REGION}
heat_metadata_server_url = {CFN_URL}
heat_waitcondition_server_url = {CFN_URL}/v1/waitcondition

[paste_deploy]
flavor =

[keystone_authtoken]
www_authenticate_uri = {identity}
{service_user}
project_name = admin
project_domain_name = Default
region_name = {REGION}

[clients_keystone]
auth_uri = {identity.removesuffix('/v3')}

[trustee]
{service_user}

[clients]
endpoint_type = public
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--remove", action="store_true", help="remove keystone.conf")
    args = parser.parse_args(argv)
    target = Path(os.environ.get("HEAT_REF_DIR", "/work/heat")) / "keystone.conf"
    if args.remove:
        target.unlink(missing_ok=True)
        print(f"heat_reference: removed {target}")
        return 0
    layout = from_env()
    if not layout.secrets.exists():
        print(f"heat_reference: {layout.secrets} is missing: run scripts.openstack_one_machine up first",
              file=sys.stderr)
        return 1
    password = load_or_make(layout.secrets).password("admin")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(conf_text(password))
    print(f"heat_reference: wrote {target}; start Heat with launch.py --keystone")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
