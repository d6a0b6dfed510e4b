"""``ember dead-letters``: what Ember set aside, and sending one again once its cause is fixed.

Reads ``dead_letters`` from ``EMBER_DATABASE_URL`` and publishes on
``EMBER_NATS_URL``, as a service would; it needs no running service.
``ember dead-letters`` lists those not replayed (``--all``: every one),
``ember dead-letters replay ID`` publishes the message again on its subject
(under a new message id, so JetStream does not drop it as a copy) and marks it
replayed. A message too large to keep (over ``dead_letters.KEEP_BYTES``) or
that this Ember cannot read cannot be replayed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys

from libs import lifecycle
from libs.config import Settings
from libs.db import Conn, dead_letters
from libs.db.pool import create_pool
from libs.messaging.bus import Bus
from libs.messaging.payloads import PayloadError, decode
from libs.messaging.subjects import Names
from libs.telemetry.tracing import make_provider


class CannotReplay(Exception):
    """This dead letter cannot be sent again; the message says why."""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="list replayed ones too")
    parser.add_argument("--limit", type=int, default=100, help="how many to list, newest first")
    sub = parser.add_subparsers(dest="dead_letter_command", metavar="COMMAND")
    replay = sub.add_parser("replay", help="publish a dead letter again on its subject")
    replay.add_argument("id", type=int)


def describe(letter: dead_letters.DeadLetter) -> str:
    text = (f"{letter.id}  {letter.created_at:%Y-%m-%d %H:%M:%S}Z  {letter.source}  {letter.subject}"
            f"  {letter.size} bytes")
    if letter.stack_id is not None:
        text += f"  stack {letter.stack_id}"
    if letter.replayed_at is not None:
        text += f"  replayed {letter.replayed_at:%Y-%m-%d %H:%M:%S}Z"
    return f"{text}\n    {letter.reason}"


async def replay(conn: Conn, bus: Bus, letter_id: int) -> dead_letters.DeadLetter:
    """Publish dead letter ``letter_id`` again and mark it replayed."""
    letter = await dead_letters.get(conn, letter_id)
    if letter is None:
        raise CannotReplay(f"no dead letter {letter_id}")
    if letter.payload is None:
        raise CannotReplay(f"dead letter {letter_id} was too large to keep ({letter.size} bytes)")
    try:
        payload = decode(letter.payload)
    except PayloadError as exc:
        raise CannotReplay(f"dead letter {letter_id} cannot be read by this Ember: {exc}") from None
    await bus.publish(letter.subject, payload, msg_id=f"{letter.msg_id or letter.subject}:replay:{letter.id}")
    await dead_letters.replayed(conn, letter_id)
    return letter


async def _run(settings: Settings, args: argparse.Namespace) -> list[str]:
    database_url, nats_url = settings.require_urls()
    names = Names(settings.nats_prefix)
    async with create_pool(database_url, min_size=1, max_size=2) as pool, pool.acquire() as conn:
        if args.dead_letter_command != "replay":
            found = await dead_letters.listing(conn, limit=args.limit, include_replayed=args.all)
            return [describe(letter) for letter in found] or ["no dead letters"]
        tracer = make_provider(settings.telemetry, "cli", "dead-letters").get_tracer("ember.cli")
        async with Bus.connect(nats_url, names, tracer, client_name="ember-dead-letters",
                               user=settings.nats_user, password=settings.nats_password) as bus:
            letter = await replay(conn, bus, args.id)
        return [f"replayed dead letter {letter.id} on {letter.subject}"]


def run(args: argparse.Namespace) -> int:
    """Run a parsed ``ember dead-letters`` command; its exit status."""
    settings = lifecycle.load_settings_or_exit(need_urls=True)
    try:
        lines = asyncio.run(_run(settings, args))
    except CannotReplay as exc:
        print(f"ember dead-letters: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0
