"""Record real Heat's answers to the Heat-parity cases (``tests/heat_parity/cases``).

Run by hand against a Heat started as ``scripts/heat_reference/README.md`` says::

    .venv/bin/python -m scripts.heat_reference.record                 # cases not yet recorded
    .venv/bin/python -m scripts.heat_reference.record previews/nested # these cases (names or globs)
    .venv/bin/python -m scripts.heat_reference.record --all           # every case again
    .venv/bin/python -m scripts.heat_reference.record --keystone clouds/*  # Heat in Keystone mode

With ``--keystone`` (a Heat started with ``launch.py --keystone``), the requests carry a token of the
one-machine OpenStack's member cloud (``ember-os``: user and project ``demo``; ``--cloud`` and
``OS_CLIENT_CONFIG_FILE`` choose another) and go to that project's id, which the answers then name as
the cases' project. Without it, Heat's noauth headers as before.

Each case's answers, normalized, go to ``<case>.heat.json`` beside it. Stacks the
case names are deleted before it runs (a crashed earlier run may have left
them) and after.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import fnmatch
import json
import os
import sys
from typing import Any

import aiohttp

from tests.heat_parity.cases import PROJECT, Case, all_cases, normalize
from tests.heat_parity.runner import Send, decoded, run_case, stack_names

HEAT_VERSION = "27.0.1"


def heat_sender(session: aiohttp.ClientSession, base: str, project: str = PROJECT) -> Send:
    async def send(method: str, path: str, body: Any) -> tuple[int, Any]:
        kwargs: dict[str, Any] = {} if body is None else {"json": body}
        async with session.request(method, f"{base}/v1/{project}{path}", **kwargs) as response:
            text = await response.text()
            # A Keystone project's id is the cases' project in every answer (links, messages).
            return response.status, decoded(text.replace(project, PROJECT) if project != PROJECT else text)
    return send


def keystone_token(cloud: str) -> tuple[str, str]:
    """A token of the cloud's user and the id of its project (clouds.yaml as openstacksdk finds it)."""
    import openstack

    from scripts.openstack_one_machine.layout import from_env

    os.environ.setdefault("OS_CLIENT_CONFIG_FILE", str(from_env().clouds_yaml))
    conn = openstack.connect(cloud=cloud)
    token = conn.session.get_token()
    project = conn.session.get_project_id()
    if not token or not project:
        raise SystemExit(f"record: no project-scoped token for cloud {cloud!r}")
    return str(token), str(project)


async def remove_stacks(send: Send, names: list[str], timeout: float) -> None:
    for name in names:
        status, body = await send("GET", f"/stacks?stack_name={name}", None)
        for stack in (body or {}).get("stacks", []) if status == 200 else []:
            path = f"/stacks/{stack['stack_name']}/{stack['id']}"
            await send("DELETE", path, None)
            deadline = asyncio.get_running_loop().time() + timeout
            while asyncio.get_running_loop().time() < deadline:
                status, shown = await send("GET", path, None)
                if status == 404 or shown["stack"]["stack_status"] in ("DELETE_COMPLETE", "DELETE_FAILED"):
                    break
                await asyncio.sleep(0.5)


async def record(case: Case, send: Send, timeout: float, keystone: bool = False) -> None:
    names = stack_names(case)
    await remove_stacks(send, names, timeout)
    try:
        answers = await run_case(send, case, wait_timeout=timeout)
    finally:
        await remove_stacks(send, names, timeout)
    body: dict[str, Any] = {"heat": HEAT_VERSION, "recorded": datetime.date.today().isoformat()}
    if keystone:
        body["auth"] = "keystone, the one-machine OpenStack"
    body["steps"] = [normalize(a) for a in answers]
    case.recording.write_text(json.dumps(body, indent=1, sort_keys=False) + "\n")


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("cases", nargs="*", help="case names or globs (default: those not recorded)")
    parser.add_argument("--all", action="store_true", help="record every case again")
    parser.add_argument("--url", default=os.environ.get("HEAT_REF_URL", "http://127.0.0.1:8005"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for a stack")
    parser.add_argument("--keystone", action="store_true",
                        help="Heat in Keystone mode: send a token of --cloud's user to its project")
    parser.add_argument("--cloud", default=os.environ.get("HEAT_REF_CLOUD", "ember-os"),
                        help="clouds.yaml entry whose token --keystone sends (default ember-os)")
    args = parser.parse_args(argv)
    chosen = [c for c in all_cases()
              if (args.all or (args.cases and any(fnmatch.fnmatch(c.name, p) for p in args.cases))
                  or (not args.cases and not c.recording.exists()))]
    # A plain member of the project, as Ember's users are (Heat's noauth caller is a cloud admin).
    headers = {"X-Auth-Token": "parity", "X-Auth-Project": PROJECT, "X-Roles": "member,reader"}
    project = PROJECT
    if args.keystone:
        token, project = keystone_token(args.cloud)
        headers = {"X-Auth-Token": token}
    failed = 0
    async with aiohttp.ClientSession(headers=headers) as session:
        send = heat_sender(session, args.url.rstrip("/"), project)
        for case in chosen:
            try:
                await record(case, send, args.timeout, args.keystone)
                print(f"recorded {case.name}")
            except Exception as exc:
                failed += 1
                print(f"FAILED {case.name}: {exc!r}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
