"""Deleting the nodes of finished traversals, a batch at a time, beside the planner's consumer.

A traversal's nodes matter while it runs; once its last node is done they only
answer a late redelivery, which finds the traversal finished and does nothing
(services/worker/node.py). Left in place, a stack of 10^6 resources would add
10^6 rows with every operation. Any number of planners may sweep: each takes a
traversal with SKIP LOCKED.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager

from libs import background
from libs.db import traversals
from libs.runtime import Runtime
from libs.telemetry import logs

log = logs.logger("planner")
# Rows per statement: each holds its locks for a few milliseconds.
BATCH = 5000
POLL_SECONDS = 10.0
# A traversal's nodes stay this long after it finished, for a person (or a test) to look at.
KEEP_SECONDS = 120.0


async def sweep_once(rt: Runtime, *, older_than: float = KEEP_SECONDS) -> int:
    """Every finished traversal's nodes, a statement (one traversal, ``BATCH`` rows) per
    transaction; how many went. Every operation of every nested stack finishes a traversal of
    its own: one traversal a round would fall behind them."""
    total = 0
    while True:
        async with rt.pool.acquire() as conn, conn.transaction():
            gone = await traversals.forget_finished_nodes(conn, batch=BATCH, older_than=older_than)
        if gone is None:
            break
        total += gone
    if total:
        log.debug("deleted %d nodes of finished traversals", total)
    return total


def sweeping(rt: Runtime) -> AbstractAsyncContextManager[None]:
    return background.every(POLL_SECONDS, lambda: sweep_once(rt), name="traversal node sweep", log=log)
