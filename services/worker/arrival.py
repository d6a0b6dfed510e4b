"""A work item with the trace it arrived in, so that batched work stays in each item's operation.

Items of several operations share a batch; the batch's own span belongs to
none of them. What the batch does for one item (its events, the successors it
releases, the stack's end it reaches) is done in that item's trace.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import NamedTuple

from opentelemetry import context as otel_context
from opentelemetry.context import Context

from libs.cloud.calls import Answers
from libs.messaging.payloads import WorkItem
from libs.telemetry import logs


@dataclasses.dataclass(frozen=True)
class Arrival:
    """A work item and the context of its consumer's span."""

    item: WorkItem
    trace: Context
    # The answers of calls its last step asked for, made for the row at ``answered`` (its version).
    answers: Answers | None = None
    answered: int | None = None


class Ready(NamedTuple):
    """A successor released by a batch, to publish after commit."""

    stack_id: str
    traversal_id: str
    node: str
    # The item whose step released it: the successor is published in that item's trace.
    by: int


@contextlib.contextmanager
def acting_for(item: WorkItem, trace: Context, resource: str | None = None) -> Iterator[None]:
    """Work done for ``item`` inside a batch: in its trace, with its ids on every line logged."""
    token = otel_context.attach(trace)
    try:
        with logs.log_context(stack_id=item.stack_id, traversal_id=item.traversal_id, node=item.node,
                              resource=resource):
            yield
    finally:
        otel_context.detach(token)
