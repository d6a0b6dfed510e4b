"""``GET /v1/{project}/stacks/{name}/{id}/events/stream``: a stack's events as server-sent events.

Ember's own route, for a UI or a ``--wait`` that would rather not poll. The
api process holds one PostgreSQL connection that ``LISTEN``s for the
``ember_events`` notification (migration 0006 sends one per statement and
stack at commit); each open stream wakes on its stack's notification and reads
the rows after the last one it sent. Each event is sent as

    id: <event uuid>
    event: event
    data: <the event as GET .../events shows it>

and a reconnecting client's ``Last-Event-ID`` (or ``?marker=``) resumes after
that event; after one the stack's event purge has deleted since, it resumes
from the oldest event kept, after a comment line saying so. ``?until=settled``
ends the stream after the stack's own event ``*_COMPLETE`` or ``*_FAILED``;
otherwise it stays open, with a comment line every 15 s so that proxies keep it.

In keystone mode the stream's token is checked again after each read (before what it read
is sent) and at least every ``EMBER_TOKEN_RECHECK_SECONDS``: once it is revoked or expired,
the stream sends a last ``event: error`` (Heat's 401 fault body) and ends, so
a token's end is also the end of what it can see.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import orjson
from aiohttp import web

from libs.db import events, listener, stacks
from libs.dependencies import down_in
from libs.engine.status import Status
from libs.template.errors import EntityNotFound, MalformedRequest
from services.api import lookup, views
from services.api.context import context
from services.api.event_feed import EventFeed
from services.api.keys import AUTHENTICATOR, EVENT_FEED, RUNTIME, SETTINGS

CHANNEL = "ember_events"
KEEPALIVE_SECONDS = 15.0
DATABASE_RETRY_SECONDS = 1.0
TOKEN_ENDED = orjson.dumps({"code": 401, "title": "Unauthorized", "error": {
    "type": "HTTPUnauthorized", "traceback": None,
    "message": "The token was revoked or has expired; authenticate again and reconnect with Last-Event-ID."}})


async def feed_ctx(app: web.Application) -> AsyncIterator[None]:
    database_url, _ = app[SETTINGS].require_urls()
    feed = EventFeed()
    async with listener.listening(database_url, CHANNEL, feed.notified, feed.wake_all):
        app[EVENT_FEED] = feed
        yield


async def _start(request: web.Request, stack_id: uuid.UUID) -> tuple[events.EventRow | None, bool]:
    """The event to resume after (None: from the first), and whether events before the first
    kept one were purged since the client saw them."""
    after = request.headers.get("Last-Event-ID") or request.query.get("marker")
    if not after:
        return None, False
    try:
        event_id = uuid.UUID(after)
    except ValueError:
        raise EntityNotFound("Event", after) from None
    async with request.app[RUNTIME].pool.acquire() as conn:
        row = await events.get(conn, stack_id, event_id)
        # Gone, on a stack whose oldest events were purged: the client's last one was among them
        # (a purge takes the oldest first), so every kept event is one it has not seen.
        if row is None and await events.purged_through(conn, stack_id):
            return None, True
    if row is None:
        raise EntityNotFound("Event", after)
    return row, False


def _ends_an_action(row: events.EventRow | None) -> bool:
    return (row is not None and row.resource_type == "OS::Heat::Stack"
            and row.status in (Status.COMPLETE, Status.FAILED))


async def _token_live(request: web.Request) -> bool:
    if request.app[SETTINGS].api.auth != "keystone":
        return True
    token = context(request).token
    return token is not None and await request.app[AUTHENTICATOR].verify(token) is not None


async def stream(request: web.Request) -> web.StreamResponse:
    stack = await lookup.stack_of(request)
    until = request.query.get("until")
    if until not in (None, "settled"):
        raise MalformedRequest(f"Unknown value {until!r} for 'until'; the one accepted is 'settled'.")
    last_row, purged = await _start(request, stack.id)
    last = last_row.seq if last_row is not None else 0
    base = lookup.base_url(request)
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                           "X-Accel-Buffering": "no"})
    await response.prepare(request)
    if purged:
        await response.write(b": the last event seen was purged (EMBER_MAX_EVENTS_PER_STACK), maybe some"
                             b" after it too: resuming from the oldest kept\n\n")
    clock = asyncio.get_running_loop()
    quiet_since = clock.time()
    api = request.app[SETTINGS].api
    wait = api.token_recheck_seconds if api.auth == "keystone" else KEEPALIVE_SECONDS
    try:
        with request.app[EVENT_FEED].watch(str(stack.id)) as wake:
            while True:
                wake.clear()  # before reading: a commit after this read wakes the next wait
                pause = wait
                try:
                    async with request.app[RUNTIME].pool.acquire() as conn:
                        rows = await events.for_stack(conn, stack.id, after_seq=last)
                        now = await stacks.get(conn, stack.id) if until == "settled" else None
                except Exception as exc:
                    if down_in(exc) is None:
                        raise
                    # The stream outlasts a database restart: it reads again shortly.
                    rows, now, pause = [], None, DATABASE_RETRY_SECONDS
                # Checked after the read, before anything read is sent: an event written after the
                # token ended was read after it ended, so this check sees the end and sends nothing.
                if not await _token_live(request):
                    await response.write(b"event: error\ndata: " + TOKEN_ENDED + b"\n\n")
                    await response.write_eof()
                    return response
                for row in rows:
                    data = orjson.dumps(views.event(base, stack, row, detail=True)).decode()
                    await response.write(f"id: {row.id}\nevent: event\ndata: {data}\n\n".encode())
                    last, last_row = row.seq, row
                    quiet_since = clock.time()
                # Settled: the stack is no longer in progress and the last event sent says how it
                # ended (an earlier action's end, replayed before a reconnect, does not count).
                if now is not None and now.status != Status.IN_PROGRESS and _ends_an_action(last_row):
                    await response.write_eof()
                    return response
                try:
                    await asyncio.wait_for(wake.wait(), timeout=pause)
                except TimeoutError:
                    if clock.time() - quiet_since >= KEEPALIVE_SECONDS:
                        await response.write(b": keepalive\n\n")
                        quiet_since = clock.time()
    except ConnectionResetError:
        # The client went away (closed the tab, ^C on --wait): the stream simply ends.
        return response

