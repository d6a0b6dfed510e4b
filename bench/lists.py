"""By hand: what the API's shows and list pages cost on a stack of many resources and events.

``python -m bench.lists --rows 100000`` writes, straight through ``libs/db`` (no create runs), two
stacks in a fresh database on embedded servers (or ``EMBER_*_URL``, as ``bench.engine``):

- ``big``: one ``OS::Heat::ResourceGroup`` whose nested stack holds ``--rows`` members, the shape of
  the issue's 10^6 stack, with ``--events-per-row`` events per member (2: every event kept, as with
  ``EMBER_MAX_EVENTS_PER_STACK=0``; the purge keeps 1,000 at most);
- ``flat``: ``--flat-rows`` (default ``--rows``) resources in one stack with its real template, each
  requiring one of the layer before it (ten
  layers), so ``required_by`` has something to find.

It then starts ``ember api`` as a process and times each request ``--repeat`` times, one at a time,
printing the first answer (cold caches), and the median and the slowest of the others. Nothing here
asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import statistics
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

import requests

from bench import engine
from bench.cloud_setup import STARTUP_TIMEOUT, stop
from libs.db import Conn, events, resources, stacks, templates
from libs.db.pool import create_pool
from libs.embedded import process
from libs.engine.status import Action, Status

PROJECT = "demo"
CHUNK = 20_000
LAYERS = 10


@dataclass(frozen=True)
class Made:
    big: uuid.UUID
    nested: uuid.UUID
    flat: uuid.UUID
    nested_name: str


async def _stack(conn: Conn, name: str, template_id: uuid.UUID, parent: uuid.UUID | None = None) -> uuid.UUID:
    stack_id = uuid.uuid4()
    await stacks.insert(conn, stack_id=stack_id, name=name, project=PROJECT, template_id=template_id,
                        disable_rollback=True, timeout_mins=None, tags=[], parent_id=parent,
                        nested_depth=0 if parent is None else 1)
    await stacks.set_state(conn, stack_id, action=Action.CREATE, status=Status.COMPLETE,
                           reason="made by bench")
    return stack_id


async def _rows(conn: Conn, stack_id: uuid.UUID, names: list[str], kind: str,
                events_per_row: int) -> list[int]:
    """Rows CREATE_COMPLETE with a physical id each, and their events; ids in the order of ``names``."""
    ids: list[int] = []
    for start in range(0, len(names), CHUNK):
        chunk = names[start:start + CHUNK]
        made = await resources.insert_new(conn, stack_id, [(n, kind) for n in chunk])
        ids += [made[n] for n in chunk]
        await events.add_many(conn, [events.NewEvent(
            stack_id=stack_id, resource_name=n, physical_resource_id="", resource_type=kind, action="CREATE",
            status=("IN_PROGRESS", "COMPLETE")[i % 2], reason="state changed")
            for n in chunk for i in range(events_per_row)])
    # The state a create leaves; a bench's own shortcut, not the engine's path.
    await conn.execute("UPDATE resources SET action = 'CREATE', status = 'COMPLETE', status_reason ="
                       " 'state changed', physical_id = gen_random_uuid()::text WHERE stack_id = $1",
                       stack_id)
    return ids


async def populate(database_url: str, rows: int, flat_rows: int, events_per_row: int) -> Made:
    names = [str(i) for i in range(rows)]
    async with create_pool(database_url, min_size=1, max_size=2) as pool, pool.acquire() as conn:
        group = {"heat_template_version": "2016-10-14", "resources": {"group": {
            "type": "OS::Heat::ResourceGroup",
            "properties": {"count": rows, "resource_def": {"type": "OS::Heat::None"}}}}}
        template_id = await templates.insert(conn, group, {}, {})
        big = await _stack(conn, "big", template_id)
        nested_name = "big-group-benchlists"
        nested = await _stack(conn, nested_name, template_id, parent=big)
        [group_id] = await _rows(conn, big, ["group"], "OS::Heat::ResourceGroup", 2)
        await _rows(conn, nested, names, "OS::Heat::None", events_per_row)
        await conn.execute("UPDATE resources SET physical_id = $2 WHERE id = $1", group_id, str(nested))
        width = max(flat_rows // LAYERS, 1)
        flat_template = {"heat_template_version": "2016-10-14", "resources": {
            f"r{i}": {"type": "OS::Heat::None", **({"depends_on": [f"r{i - width}"]} if i >= width else {})}
            for i in range(flat_rows)}}
        flat = await _stack(conn, "flat", await templates.insert(conn, flat_template, {}, {}))
        ids = await _rows(conn, flat, [f"r{i}" for i in range(flat_rows)], "OS::Heat::None", events_per_row)
        # Each row past the first layer requires the row of its index in the layer before.
        await conn.execute("UPDATE resources r SET requires = ARRAY[x.needed] FROM unnest($1::bigint[],"
                           " $2::bigint[]) AS x(id, needed) WHERE r.id = x.id",
                           ids[width:], ids[:len(ids) - width])
        await conn.execute("ANALYZE")
    return Made(big=big, nested=nested, flat=flat, nested_name=nested_name)


def _timed(session: requests.Session, url: str, repeat: int) -> tuple[list[float], int, int, int]:
    """Seconds of each answer, the first (cold caches: the api's template summary, PostgreSQL's pages)
    first, with the last one's status, size and number of listed items."""
    seconds = []
    for _ in range(repeat + 1):
        started = time.perf_counter()
        answer = session.get(url, timeout=120)
        seconds.append(time.perf_counter() - started)
    body = answer.json()
    items = next((len(v) for v in body.values() if isinstance(v, list)), 1) if isinstance(body, dict) else 0
    return seconds, answer.status_code, len(answer.content), items


def _report(session: requests.Session, label: str, url: str, repeat: int) -> None:
    seconds, status, size, items = _timed(session, url, repeat)
    warm = seconds[1:]
    first, median, slowest = (1000 * x for x in (seconds[0], statistics.median(warm), max(warm)))
    print(f"{label:<52} {status:>6} {items:>6} {size:>8} {first:>8.1f} {median:>10.1f} {slowest:>8.1f}",
          flush=True)


def requests_to_time(made: Made, rows: int, flat_rows: int) -> list[tuple[str, str]]:
    big, nested, flat = (f"/v1/{PROJECT}/stacks/big/{made.big}",
                         f"/v1/{PROJECT}/stacks/{made.nested_name}/{made.nested}",
                         f"/v1/{PROJECT}/stacks/flat/{made.flat}")
    middle = str(rows // 2)
    return [
        ("stack show (the group's parent)", big),
        ("stack show (the nested stack of N)", nested),
        ("stack show (flat: its template of N resources)", flat),
        ("resource show (a member)", f"{nested}/resources/{middle}"),
        ("resource show (flat, required_by)", f"{flat}/resources/r{flat_rows // 2 - flat_rows // 20}"),
        ("resource show (a name none has: 404)", f"{nested}/resources/nobody"),
        ("resources, first page of 100", f"{nested}/resources?limit=100"),
        ("resources, page of 100 after a marker", f"{nested}/resources?limit=100&marker={middle}"),
        ("resources, nested_depth=1 page after group/<m>",
         f"{big}/resources?nested_depth=1&limit=100&marker={quote(f'group/{middle}', safe='')}"),
        ("resources, page of 100 filtered by status", f"{nested}/resources?limit=100&status=CREATE_COMPLETE"),
        ("resources (flat), page of 100 after a marker",
         f"{flat}/resources?limit=100&marker=r{flat_rows // 2}"),
        ("events, newest page of 100", f"{nested}/events?limit=100"),
        ("events, oldest page of 100 (sort_dir=asc)", f"{nested}/events?limit=100&sort_dir=asc"),
        ("events, parent with nested_depth=1, page of 100", f"{big}/events?nested_depth=1&limit=100"),
        ("events of one resource (a member, all of them)", f"{nested}/resources/{middle}/events"),
        ("events filtered by resource_name, page of 100",
         f"{nested}/events?resource_name={middle}&limit=100"),
    ]


async def _in_progress(database_url: str, made: Made) -> None:
    """Both stacks of the group under way again: show then looks for paused nodes in the tree."""
    async with create_pool(database_url, min_size=1, max_size=1) as pool, pool.acquire() as conn:
        for stack_id in (made.big, made.nested):
            await stacks.set_state(conn, stack_id, action=Action.UPDATE, status=Status.IN_PROGRESS,
                                   reason="bench")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.lists", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000,
                        help="members of the group (and, by default, resources of the flat stack)")
    parser.add_argument("--flat-rows", type=int, help="resources of the flat stack (default: --rows)")
    parser.add_argument("--events-per-row", type=int, default=2, help="events written per resource")
    parser.add_argument("--repeat", type=int, default=20, help="times each request is timed")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(argv)
    run_id = uuid.uuid4().hex[:8]
    try:
        with contextlib.ExitStack() as stack:
            scratch = process.scratch_dir(f"ember-bench-lists-{run_id}-")
            stack.callback(shutil.rmtree, scratch, True)
            servers = engine.start_servers(scratch, stack, run_id, pg_stats=False)
            asyncio.run(engine.prepare(servers, pg_stats=False))
            if not (servers.own_postgres and servers.own_nats):
                stack.callback(lambda: asyncio.run(engine.drop(servers)))
            started = time.monotonic()
            flat_rows = options.flat_rows if options.flat_rows is not None else options.rows
            made = asyncio.run(populate(servers.database_url, options.rows, flat_rows,
                                        options.events_per_row))
            print(f"bench.lists {run_id}: {options.rows} members, {flat_rows} flat resources,"
                  f" {options.events_per_row} events per row, written in {time.monotonic() - started:.1f} s;"
                  f" {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.1f}", flush=True)
            port = process.free_port()
            log = scratch / "api.log"
            env = {**os.environ, "EMBER_DATABASE_URL": servers.database_url,
                   "EMBER_NATS_URL": servers.nats_url, "EMBER_NATS_PREFIX": servers.prefix,
                   "EMBER_DATA_DIR": str(scratch / "data"), "EMBER_API_BIND": f"127.0.0.1:{port}",
                   "EMBER_AUTH": "noauth", "EMBER_LOG_LEVEL": "WARNING"}
            api = process.spawn([sys.executable, "-m", "libs.cli", "api"], log_path=log, env=env,
                                cwd=engine.REPO)
            stack.callback(stop, api)
            session = requests.Session()
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + STARTUP_TIMEOUT
            while True:
                process.check_running(api, log)
                with contextlib.suppress(requests.RequestException):
                    if session.get(f"{base}/v1/{PROJECT}/stacks", timeout=5).status_code == 200:
                        break
                if time.monotonic() > deadline:
                    raise engine.BenchError("the api did not answer in time")
                time.sleep(0.2)
            print(f"{'request':<52} {'status':>6} {'items':>6} {'bytes':>8} {'first ms':>8} {'median ms':>10}"
                  f" {'max ms':>8}")
            for label, path in requests_to_time(made, options.rows, flat_rows):
                _report(session, label, base + path, options.repeat)
            asyncio.run(_in_progress(servers.database_url, made))
            _report(session, "stack show (the parent, UPDATE_IN_PROGRESS)",
                    f"{base}/v1/{PROJECT}/stacks/big/{made.big}", options.repeat)
    except engine.BenchError as exc:
        print(f"bench.lists: FAILED: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
