"""``ember simcloud``: the simulated OpenStack on a PostgreSQL database, in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import os

from libs.simcloud import agents, seeds, server
from libs.simcloud.state import SimSettings
from libs.telemetry import logs

DEFAULT_PORT = 8776


def _env_float(name: str, default: float) -> float:
    # `ember dev` passes its environment on: these reach the simulator it starts.
    raw = os.environ.get(f"EMBER_SIMCLOUD_{name}", "").strip()
    return float(raw) if raw else default


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = SimSettings()
    parser.add_argument("--bind", default=os.environ.get("EMBER_SIMCLOUD_BIND", f"127.0.0.1:{DEFAULT_PORT}"),
                        help="host:port to listen on (EMBER_SIMCLOUD_BIND)")
    parser.add_argument("--database-url", default=os.environ.get("EMBER_SIMCLOUD_DATABASE_URL")
                        or os.environ.get("EMBER_DATABASE_URL"),
                        help="PostgreSQL URL; state goes to its schema simcloud "
                             "(EMBER_SIMCLOUD_DATABASE_URL, else EMBER_DATABASE_URL)")
    parser.add_argument("--boot-seconds", type=float,
                        default=_env_float("BOOT_SECONDS", defaults.boot_seconds),
                        help="seconds a server stays in BUILD (EMBER_SIMCLOUD_BOOT_SECONDS)")
    parser.add_argument("--error-share", type=float,
                        default=_env_float("ERROR_SHARE", defaults.error_share),
                        help="share of boots (0..1) that end in ERROR (EMBER_SIMCLOUD_ERROR_SHARE)")
    parser.add_argument("--volume-seconds", type=float,
                        default=_env_float("VOLUME_SECONDS", defaults.volume_seconds),
                        help="seconds a volume stays creating, attaching or detaching "
                             "(EMBER_SIMCLOUD_VOLUME_SECONDS)")
    parser.add_argument("--delete-seconds", type=float,
                        default=_env_float("DELETE_SECONDS", defaults.delete_seconds),
                        help="seconds a deleted server still shows (task_state deleting) "
                             "(EMBER_SIMCLOUD_DELETE_SECONDS)")
    parser.add_argument("--seed", type=float, default=_env_float("SEED", defaults.seed),
                        help="seed of the draws that choose which boots fail; -1: unseeded "
                             "(EMBER_SIMCLOUD_SEED)")
    parser.add_argument("--agents-api-url", default=os.environ.get("EMBER_SIMCLOUD_AGENTS_API_URL"),
                        help="run an `ember agent` for each ACTIVE server booted for software config, "
                             "polling and signalling Ember's API at this URL (it runs templates' scripts "
                             "on this machine; `ember dev` sets it) (EMBER_SIMCLOUD_AGENTS_API_URL)")
    parser.add_argument("--agents-dir", default=os.environ.get("EMBER_SIMCLOUD_AGENTS_DIR"),
                        help="where each such server's filesystem is, a folder per server "
                             "(EMBER_SIMCLOUD_AGENTS_DIR)")
    parser.add_argument("--agents-nats-url", default=os.environ.get("EMBER_SIMCLOUD_AGENTS_NATS_URL"),
                        help="the NATS the agents listen to for pushed deployments and answer NATS_SIGNAL "
                             "on (EMBER_SIMCLOUD_AGENTS_NATS_URL)")
    parser.add_argument("--agents-nats-prefix", default=os.environ.get("EMBER_SIMCLOUD_AGENTS_NATS_PREFIX"),
                        help="the prefix of Ember's subjects there (EMBER_SIMCLOUD_AGENTS_NATS_PREFIX)")
    parser.add_argument("--agents-nats-users", default=os.environ.get("EMBER_SIMCLOUD_AGENTS_NATS_USERS"),
                        help="the users file of an authorizing nats-server (`ember dev` writes it): each "
                             "agent connects as its project's user (EMBER_SIMCLOUD_AGENTS_NATS_USERS)")
    parser.add_argument("--admin-password", default=os.environ.get("EMBER_SIMCLOUD_ADMIN_PASSWORD", "admin"))
    parser.add_argument("--demo-password", default=os.environ.get("EMBER_SIMCLOUD_DEMO_PASSWORD", "demo"))


def options(args: argparse.Namespace) -> server.Options:
    host, _, port = str(args.bind).rpartition(":")
    return server.Options(
        database_url=args.database_url, host=host or "127.0.0.1", port=int(port),
        settings=SimSettings(boot_seconds=args.boot_seconds, error_share=args.error_share,
                             volume_seconds=args.volume_seconds, delete_seconds=args.delete_seconds,
                             seed=args.seed),
        credentials=seeds.Credentials(admin_password=args.admin_password, demo_password=args.demo_password),
        agents=agents.settings_of(args.agents_api_url, args.agents_dir, nats_url=args.agents_nats_url,
                                  nats_prefix=args.agents_nats_prefix, nats_users=args.agents_nats_users))


def run(args: argparse.Namespace) -> int:
    if not args.database_url:
        print("ember simcloud: give --database-url (or EMBER_SIMCLOUD_DATABASE_URL / EMBER_DATABASE_URL)")
        return 2
    logs.configure("simcloud", os.uname().nodename, os.environ.get("EMBER_LOG_LEVEL", "INFO"),
                   os.environ.get("EMBER_LOG_FORMAT", "json"))
    asyncio.run(server.serve(options(args)))
    return 0
