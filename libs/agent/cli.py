"""``ember agent``: run this server's software configs, as os-collect-config and heat-config do for Heat.

Options mirror ``EMBER_AGENT_*`` variables (:mod:`libs.agent.settings`). A bad
value ends it at once with one line naming the option; SIGTERM or Ctrl-C
stop it, leaving runs under way to finish (a later start collects them).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys

from libs.agent import agent, settings
from libs.agent.workdir import Busy
from libs.config import ConfigError
from libs.telemetry import logs


def configure(parser: argparse.ArgumentParser) -> None:
    for name, variable, text in settings.OPTIONS:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, metavar=name.split("_")[-1].upper(),
                            help=f"{text} [{variable}]")


async def _serve(chosen: settings.AgentSettings) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await agent.serve(chosen, stop)


def run(args: argparse.Namespace) -> int:
    try:
        chosen = settings.load(vars(args), os.environ)
    except ConfigError as exc:
        print(f"ember agent: bad configuration: {exc}", file=sys.stderr)
        return 2
    logs.configure("agent", chosen.server_id, chosen.log_level, chosen.log_format)
    try:
        asyncio.run(_serve(chosen))
    except Busy as exc:
        print(f"ember agent: {exc}", file=sys.stderr)
        return 1
    return 0
