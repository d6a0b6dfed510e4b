"""``ember simcloud``: the simulated OpenStack on a PostgreSQL database, in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import os

from libs.simcloud import seeds, server
from libs.simcloud.state import SimSettings
from libs.telemetry import logs

DEFAULT_PORT = 8776


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = SimSettings()
    parser.add_argument("--bind", default=os.environ.get("EMBER_SIMCLOUD_BIND", f"127.0.0.1:{DEFAULT_PORT}"),
                        help="host:port to listen on (EMBER_SIMCLOUD_BIND)")
    parser.add_argument("--database-url", default=os.environ.get("EMBER_SIMCLOUD_DATABASE_URL")
                        or os.environ.get("EMBER_DATABASE_URL"),
                        help="PostgreSQL URL; state goes to its schema simcloud "
                             "(EMBER_SIMCLOUD_DATABASE_URL, else EMBER_DATABASE_URL)")
    parser.add_argument("--boot-seconds", type=float, default=defaults.boot_seconds,
                        help="seconds a server stays in BUILD")
    parser.add_argument("--error-share", type=float, default=defaults.error_share,
                        help="share of boots (0..1) that end in ERROR")
    parser.add_argument("--volume-seconds", type=float, default=defaults.volume_seconds,
                        help="seconds a volume stays creating, attaching or detaching")
    parser.add_argument("--admin-password", default=os.environ.get("EMBER_SIMCLOUD_ADMIN_PASSWORD", "admin"))
    parser.add_argument("--demo-password", default=os.environ.get("EMBER_SIMCLOUD_DEMO_PASSWORD", "demo"))


def options(args: argparse.Namespace) -> server.Options:
    host, _, port = str(args.bind).rpartition(":")
    return server.Options(
        database_url=args.database_url, host=host or "127.0.0.1", port=int(port),
        settings=SimSettings(boot_seconds=args.boot_seconds, error_share=args.error_share,
                             volume_seconds=args.volume_seconds),
        credentials=seeds.Credentials(admin_password=args.admin_password, demo_password=args.demo_password))


def run(args: argparse.Namespace) -> int:
    if not args.database_url:
        print("ember simcloud: give --database-url (or EMBER_SIMCLOUD_DATABASE_URL / EMBER_DATABASE_URL)")
        return 2
    logs.configure("simcloud", os.uname().nodename, os.environ.get("EMBER_LOG_LEVEL", "INFO"),
                   os.environ.get("EMBER_LOG_FORMAT", "json"))
    asyncio.run(server.serve(options(args)))
    return 0
