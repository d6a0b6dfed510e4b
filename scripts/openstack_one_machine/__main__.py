"""The one-machine OpenStack, by hand.

    .venv/bin/python -m scripts.openstack_one_machine up       # install, start, wait, seed
    .venv/bin/python -m scripts.openstack_one_machine status   # processes, memory, clouds.yaml
    .venv/bin/python -m scripts.openstack_one_machine stop     # stop every process
    .venv/bin/python -m scripts.openstack_one_machine drop     # stop, drop its databases and state

``EMBER_OPENSTACK_DIR`` (default ``~/.cache/ember-openstack``) holds the venv, configs,
logs and clouds.yaml; ``EMBER_OPENSTACK_DB_PREFIX`` (``ember_os_``) prefixes its databases;
``EMBER_OPENSTACK_MYSQL`` (``root@127.0.0.1:3306``) and ``EMBER_OPENSTACK_RABBIT``
(``guest:guest@127.0.0.1:5672/``) name the servers it uses.
"""

from __future__ import annotations

import sys

from scripts.openstack_one_machine import cloud, processes
from scripts.openstack_one_machine.layout import from_env


def main(argv: list[str]) -> int:
    verb = argv[0] if argv else "up"
    layout = from_env()
    if verb == "up":
        try:
            cloud.up(layout)
        except cloud.NotReady as exc:
            print(f"openstack: {exc}", file=sys.stderr)
            return 1
        print(f"export OS_CLIENT_CONFIG_FILE={layout.clouds_yaml} OS_CLOUD={layout.member_cloud}")
    elif verb == "status":
        count, mib = processes.rss_mib(layout)
        state = "running" if cloud.running(layout) else "not (all) running"
        print(f"openstack: {state}; {count} processes, {mib:.0f} MiB RSS; data {layout.data}")
    elif verb == "stop":
        print("openstack: stopped " + (", ".join(cloud.stop(layout)) or "nothing"))
    elif verb == "drop":
        print("openstack: dropped " + ", ".join(cloud.drop(layout)))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
