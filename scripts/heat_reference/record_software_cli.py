"""Record what ``openstack software config|deployment ...`` prints against real Heat.

Run by hand against a Heat started as ``scripts/heat_reference/README.md`` says, whose ``admin``
project holds no software config or deployment (``setup.sh --reset`` before it starts)::

    PYTHONPATH=$PWD .venv/bin/python -m scripts.heat_reference.record_software_cli [--url URL]

Writes ``tests/integration/data/software_cli_heat.json``, which
``tests/integration/test_software_cli.py`` compares Ember's transcript with.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
from pathlib import Path

from tests.integration.clients import Osc
from tests.integration.software_cli import HEAT_TRANSCRIPT, ids_in, session

HEAT_VERSION = "27.0.1"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default=os.environ.get("HEAT_REF_URL", "http://127.0.0.1:8005"))
    args = parser.parse_args(argv)
    # Heat's noauth caller is the project of X-Auth-Project, admin when none is sent (as openstack sends).
    endpoint = f"{args.url.rstrip('/')}/v1/admin"
    with tempfile.TemporaryDirectory() as work:
        transcript = session(Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": endpoint}, Path(work)), endpoint)
    if ids_in(transcript):
        print("record_software_cli: an id was left in the transcript", file=sys.stderr)
        return 1
    HEAT_TRANSCRIPT.parent.mkdir(exist_ok=True)
    recorded = {"heat": HEAT_VERSION, "recorded": datetime.date.today().isoformat(), "steps": transcript}
    HEAT_TRANSCRIPT.write_text(json.dumps(recorded, indent=1) + "\n")
    print(f"recorded {len(transcript)} commands in {HEAT_TRANSCRIPT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
