"""Desired states by (stack, template): parsed once per worker process, then reused.

A template id names an immutable desired state, so an entry never goes stale;
the bound keeps a long-running worker's memory flat.
"""

from __future__ import annotations

import collections
import dataclasses
import uuid

from libs.db import Conn, stacks, templates
from libs.engine import desired
from services.worker import evaluation


@dataclasses.dataclass(frozen=True)
class Entry:
    desired: desired.Desired
    # The resources and outputs resolved in the evaluation pool, and what the pool loads them from
    # (None when there are none: most templates never cross).
    heavy: frozenset[str]
    heavy_outputs: frozenset[str]
    source: evaluation.Source | None
    project: str


class DesiredCache:
    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: collections.OrderedDict[tuple[uuid.UUID, uuid.UUID], Entry] = (
            collections.OrderedDict())
        # The same entries by their desired state, for code that holds only that (a stack's end).
        self._by_desired: dict[int, Entry] = {}

    async def get(self, conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID) -> desired.Desired:
        return (await self.entry(conn, stack, template_id)).desired

    async def entry(self, conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID) -> Entry:
        key = (stack.id, template_id)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        raw = await templates.get(conn, template_id)
        loaded = desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                              stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)
        heavy, heavy_outputs = evaluation.heavy_resources(loaded), evaluation.heavy_outputs(loaded)
        source = evaluation.Source.of((str(stack.id), str(template_id)), raw, stack_name=stack.name,
                                      project_id=stack.project) if heavy or heavy_outputs else None
        entry = self._entries[key] = Entry(loaded, heavy, heavy_outputs, source, stack.project)
        self._by_desired[id(loaded)] = entry
        while len(self._entries) > self._size:
            _, gone = self._entries.popitem(last=False)
            self._by_desired.pop(id(gone.desired), None)
        return entry

    def entry_for(self, want: desired.Desired) -> Entry | None:
        """The entry of a desired state this cache loaded (None if it has gone since)."""
        found = self._by_desired.get(id(want))
        return found if found is not None and found.desired is want else None
