"""``ember stack ...``: Ember's debugger from a shell, as a client of a running Ember API.

``break`` sets, lists and clears breakpoints; ``step`` and ``continue`` let
the paused nodes go; ``paused`` says where the stack waits; ``watch`` shows a
live tree (libs/stack_watch). Everything goes through the API over HTTP, so the
commands work against any Ember, local or not: ``--url`` (``EMBER_API_URL``),
``--project`` (``EMBER_PROJECT`` or ``OS_PROJECT_ID``), and ``--token``
(``OS_AUTH_TOKEN``) where the API wants one. A Heat fault is printed as its
message on stderr, with exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import aiohttp

from libs import stack_watch
from libs.api_client import REQUEST_TIMEOUT, Api, ApiError, parse_time
from libs.stack_watch import elapsed

DEFAULT_URL = "http://127.0.0.1:8004"


def describe(bp: dict[str, Any]) -> str:
    text = f"{bp['id']}  {bp['resource']}  at {', '.join(bp['hooks'])}"
    if bp.get("resource_type"):
        text += f"  type {bp['resource_type']}"
    if bp.get("timeout") is not None:
        text += f"  timeout {bp['timeout']:g}s, then {bp.get('on_timeout') or 'fail'}"
    return text


def describe_paused(paused: dict[str, Any], now: datetime.datetime) -> str:
    text = f"{paused['resource']}  at {paused['hook']}"
    since = parse_time(paused.get("since"))
    if since is not None:
        text += f"  since {since:%Y-%m-%d %H:%M:%S}Z ({elapsed((now - since).total_seconds())})"
    if paused.get("source"):
        text += f"  by {paused['source']}"
    if paused.get("deadline"):
        text += f"  until {paused['deadline']}, then {paused.get('on_timeout') or 'fail'}"
    return text


async def _break(api: Api, path: str, args: argparse.Namespace) -> list[str]:
    if args.list:
        found = (await api.call("GET", f"{path}/breakpoints"))["breakpoints"]
        return [describe(bp) for bp in found] or ["no breakpoints"]
    if args.clear:
        await api.call("DELETE", f"{path}/breakpoints/{quote(args.clear, safe='')}")
        return [f"cleared breakpoint {args.clear}"]
    if args.clear is not None:
        await api.call("DELETE", f"{path}/breakpoints")
        return ["cleared every breakpoint"]
    body: dict[str, Any] = {"resource": args.resource}
    if args.hooks:
        body["hooks"] = [hook for given in args.hooks for hook in given.split(",") if hook]
    if args.resource_type:
        body["resource_type"] = args.resource_type
    if args.timeout is not None:
        body["timeout"] = args.timeout
    if args.on_timeout:
        body["on_timeout"] = args.on_timeout
    return [f"set {describe((await api.call('POST', f'{path}/breakpoints', body=body))['breakpoint'])}"]


async def _command(api: Api, args: argparse.Namespace) -> int:
    command = args.stack_command
    if command == "watch":
        return await stack_watch.watch(api, args.stack, until_settled=args.until_settled,
                                       max_depth=args.nested_depth, out=sys.stdout, tty=sys.stdout.isatty())
    path = await api.stack_path(args.stack)
    if command == "break":
        lines = await _break(api, path, args)
    elif command in ("step", "continue"):
        released = (await api.call("POST", f"{path}/{command}"))["released"]
        lines = [f"released {r['stack_name']}/{r['resource_name']} at {r['hook']}" for r in released]
        lines = lines or ["nothing was paused"]
    else:
        now = datetime.datetime.now(datetime.UTC)
        paused = (await api.call("GET", f"{path}/paused"))["paused"]
        lines = [describe_paused(p, now) for p in paused] or ["nothing is paused"]
    print("\n".join(lines), flush=True)
    return 0


async def _run(args: argparse.Namespace) -> int:
    headers = {"Accept": "application/json"}
    if args.token:
        headers["X-Auth-Token"] = args.token
    async with aiohttp.ClientSession(headers=headers, timeout=REQUEST_TIMEOUT) as session:
        return await _command(Api(session, args.url, args.project), args)


def _misuse(args: argparse.Namespace) -> str | None:
    if args.stack_command != "break":
        return None
    listing = args.list or args.clear is not None
    given = [args.resource, args.hooks, args.resource_type, args.timeout, args.on_timeout]
    if listing and any(v is not None for v in given):
        return "--list and --clear take no resource, --hook, --type, --timeout or --on-timeout"
    if not listing and args.resource is None:
        return "a resource (a name, a pattern or a nested path such as group/0), --list or --clear is needed"
    return None


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``ember stack`` command; its exit status."""
    misuse = _misuse(args)
    if misuse is not None:
        print(f"ember stack {args.stack_command}: {misuse}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_run(args))
    except ApiError as exc:
        print(exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader of a watch went away (| head)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that exit's flush is quiet
        return 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the ``stack`` commands to ``parser`` (``ember stack``'s own, or a standalone one)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--url", default=os.environ.get("EMBER_API_URL") or DEFAULT_URL,
                        help="the Ember API (default: $EMBER_API_URL, else %(default)s)")
    project = os.environ.get("EMBER_PROJECT") or os.environ.get("OS_PROJECT_ID") or "demo"
    common.add_argument("--project", default=project,
                        help="the project in the API's paths (default: $EMBER_PROJECT, $OS_PROJECT_ID, demo)")
    common.add_argument("--token", default=os.environ.get("OS_AUTH_TOKEN"),
                        help="sent as X-Auth-Token (default: $OS_AUTH_TOKEN; noauth needs none)")
    sub = parser.add_subparsers(dest="stack_command", required=True, metavar="COMMAND")
    brk = sub.add_parser("break", parents=[common], help="set, list or clear a stack's breakpoints")
    brk.add_argument("stack", help="stack name or id")
    brk.add_argument("resource", nargs="?", help="a resource name, fnmatch pattern or nested path (a/b)")
    brk.add_argument("--hook", dest="hooks", action="append", metavar="HOOK",
                     help="a hook to pause at (repeat, or comma-separate; default: pre-create, "
                          "pre-update, pre-delete)")
    brk.add_argument("--type", dest="resource_type", metavar="TYPE", help="only resources of this type")
    brk.add_argument("--timeout", type=float, metavar="SECONDS", help="how long a pause may last")
    brk.add_argument("--on-timeout", choices=("fail", "continue"),
                     help="when the timeout passes: fail the resource (default) or go on")
    which = brk.add_mutually_exclusive_group()
    which.add_argument("--list", action="store_true", help="list the stack's breakpoints")
    which.add_argument("--clear", nargs="?", const="", metavar="ID", help="clear one breakpoint, or all")
    for name, text in (("step", "release the paused nodes and pause each node that starts next"),
                       ("continue", "release the paused nodes and run the operation to its end"),
                       ("paused", "the nodes paused in the stack and its nested stacks")):
        sub.add_parser(name, parents=[common], help=text).add_argument("stack", help="stack name or id")
    watch = sub.add_parser("watch", parents=[common], help="a live tree of the stack's resources")
    watch.add_argument("stack", help="stack name or id")
    watch.add_argument("--until-settled", action="store_true",
                       help="end when the stack's action ends: exit 0 if it completed, 1 if it failed")
    watch.add_argument("--nested-depth", type=int, default=5, metavar="N",
                       help="how deep to follow nested stacks (default: %(default)s)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember stack", description="Ember's debugger on a running API.")
    configure(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
