"""The ``ember`` command: one service, all of them (``dev``), ``migrate``, the debugger (``stack``),
``dead-letters``, the simulated OpenStack (``simcloud``), or a server's software config agent (``agent``)."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import sys
from collections.abc import Sequence

from libs.messaging.subjects import SERVICES


def _run_service(name: str) -> None:
    # Imported by name so that services stay independent packages: the CLI
    # knows their names, never their insides.
    module = importlib.import_module(f"services.{name}.main")
    module.main()


def _stopped_before_start(signum: int, frame: object) -> None:
    raise SystemExit(0)


def _migrate() -> None:
    from libs import lifecycle
    from libs.db import migrate

    settings = lifecycle.load_settings_or_exit(need_urls=True)
    assert settings.database_url is not None
    database_url = settings.database_url

    async def prepare() -> list[int]:
        await migrate.ensure_database(database_url)
        return await migrate.migrate_url(database_url)

    applied = asyncio.run(prepare())
    print(f"applied {applied}" if applied else "schema is up to date")


def _dev() -> None:
    from libs import dev

    raise SystemExit(dev.main())


def _simcloud(args: argparse.Namespace) -> None:
    from libs.simcloud import cli as simcloud_cli

    raise SystemExit(simcloud_cli.run(args))


def _nats_config(projects: list[str], passwords: bool) -> None:
    from libs import lifecycle
    from libs.messaging import server_auth
    from libs.messaging.subjects import Names

    names = Names(lifecycle.load_settings_or_exit().nats_prefix)
    text = (server_auth.password_lines(names, projects) if passwords
            else server_auth.config_from_env(names, projects))
    sys.stdout.write(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember",
        description="Ember: a convergence engine for Heat templates. Configured by EMBER_* variables.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SERVICES:
        sub.add_parser(name, help=f"run the {name} service")
    sub.add_parser("dev", help="run everything on this machine (embedded Postgres and NATS "
                               "unless EMBER_DATABASE_URL / EMBER_NATS_URL are set)")
    sub.add_parser("migrate", help="create EMBER_DATABASE_URL's database if missing and apply migrations")
    nats_config = sub.add_parser(
        "nats-config", help="print nats-server's authorization block: a user per service, one per --project")
    nats_config.add_argument("--project", action="append", default=[],
                             help="a project whose integrations get a user limited to its subjects")
    nats_config.add_argument("--passwords", action="store_true",
                             help="print fresh passwords for those users instead, as .env lines")
    from libs.simcloud import cli as simcloud_cli

    simcloud_cli.configure(sub.add_parser("simcloud", help="run the simulated OpenStack (Keystone, Nova, "
                                                           "Glance, Neutron, Cinder) on PostgreSQL"))
    from libs import dead_letter_cli, stack_cli

    stack_cli.configure(sub.add_parser("stack", help="Ember's debugger on a running API: break, step, "
                                                     "continue, paused, watch"))
    dead_letter_cli.configure(sub.add_parser("dead-letters", help="list the messages Ember set aside, or "
                                                                  "replay one (needs both URLs)"))
    from libs.agent import cli as agent_cli

    agent_cli.configure(sub.add_parser(
        "agent", help="run a server's software configs (what os-collect-config and heat-config hooks"
                      " are for Heat): runs template scripts on this machine"))
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    given = list(sys.argv[1:] if argv is None else argv)
    if given[:1] and given[0] in SERVICES:
        # A SIGTERM while the service still imports and starts (seconds on a busy machine) finds
        # no handler of its event loop yet: it stops the process as asked, with status 0, rather
        # than killing it. The loop's own handler (libs.lifecycle) takes over once it runs.
        signal.signal(signal.SIGTERM, _stopped_before_start)
    args = build_parser().parse_args(given)
    if args.command in SERVICES:
        _run_service(args.command)
    elif args.command == "migrate":
        _migrate()
    elif args.command == "dev":
        _dev()
    elif args.command == "nats-config":
        _nats_config(args.project, args.passwords)
    elif args.command == "simcloud":
        _simcloud(args)
    elif args.command == "stack":
        from libs import stack_cli

        raise SystemExit(stack_cli.run(args))
    elif args.command == "dead-letters":
        from libs import dead_letter_cli

        raise SystemExit(dead_letter_cli.run(args))
    elif args.command == "agent":
        from libs.agent import cli as agent_cli

        raise SystemExit(agent_cli.run(args))
    else:  # argparse rejects unknown commands before this
        sys.exit(2)


if __name__ == "__main__":
    main()
