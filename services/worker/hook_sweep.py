"""Re-queue paused nodes that need a worker again, without anyone holding them meanwhile.

A node at a hook is acked and forgotten by NATS; three things bring it back:
its hook is cleared (the clearer publishes it; this sweep again, should that
publish be lost), its hook's own deadline passes, or its traversal runs out
of time. Any number of workers may sweep: rows are picked with SKIP LOCKED
and marked, so each is re-queued by one of them.
"""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager

from libs import background
from libs.db import hooks
from libs.messaging.payloads import WorkItem
from libs.runtime import Runtime
from libs.telemetry import logs

log = logs.logger("worker")
# A cleared hook's node normally goes on within milliseconds; after this, the publish was lost.
RESUME_AFTER_SECONDS = 2.0
# How soon the same row may be re-queued again (the node may be busy or its lock held).
NUDGE_EVERY_SECONDS = 10.0


async def sweep_once(rt: Runtime) -> int:
    async with rt.pool.acquire() as conn:
        due = await hooks.due(conn, resume_after=RESUME_AFTER_SECONDS, nudge_every=NUDGE_EVERY_SECONDS)
    for row in due:
        item = WorkItem(stack_id=str(row.stack_id), traversal_id=str(row.traversal_id), node=row.node)
        # Not the node's own message id: JetStream would drop it as a duplicate of the first.
        # In the trace of the operation the node paused.
        await rt.bus.publish(rt.names.work(item.stack_id), item, msg_id=f"{item.msg_id}:sweep:{time.time()}",
                             context=row.trace.context())
    if due:
        log.info("re-queued %d node(s) at hooks", len(due))
    return len(due)


def sweeping(rt: Runtime) -> AbstractAsyncContextManager[None]:
    return background.every(rt.settings.hook_sweep_seconds, lambda: sweep_once(rt),
                            name="hook sweep", log=log)
