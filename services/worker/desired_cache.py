"""Desired states by (stack, template): parsed once per worker process, then reused.

A template id names an immutable desired state, so an entry never goes stale.
The cache is bounded by the resources its entries hold, not by their number:
1,000 groups of 1,000 members under way at once are 1,001 small desired states,
a group of 10^6 members one big one. Bounded at 64 entries, the 101 of 100
groups under way were each loaded again for nearly every step, in turn.
"""

from __future__ import annotations

import collections
import dataclasses
import uuid
from typing import Generic, TypeVar

from libs.db import Conn, stacks, templates
from libs.engine import desired
from libs.template.errors import TemplateError
from services.worker import evaluation

# The resources the cache holds in all (each entry counts at least one); the most recent entry is
# kept whatever its size.
RESOURCES_KEPT = 250_000

_K = TypeVar("_K")
_V = TypeVar("_V")


class WeightedLru(Generic[_K, _V]):
    """Least recently used entries go first, once the entries' weights pass ``budget``."""

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._held = 0
        self._entries: collections.OrderedDict[_K, tuple[_V, int]] = collections.OrderedDict()

    def get(self, key: _K) -> _V | None:
        found = self._entries.get(key)
        if found is None:
            return None
        self._entries.move_to_end(key)
        return found[0]

    def put(self, key: _K, value: _V, weight: int) -> list[_V]:
        """Keep ``value``; the values that made room for it."""
        gone: list[_V] = []
        old = self._entries.pop(key, None)
        if old is not None:  # loaded twice at once: the first copy goes
            self._held -= old[1]
            gone.append(old[0])
        self._entries[key] = (value, max(weight, 1))
        self._held += max(weight, 1)
        while self._held > self._budget and len(self._entries) > 1:
            _, (value_gone, weight_gone) = self._entries.popitem(last=False)
            self._held -= weight_gone
            gone.append(value_gone)
        return gone

    @property
    def held(self) -> int:
        return self._held

    def __len__(self) -> int:
        return len(self._entries)


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
    def __init__(self, resources: int = RESOURCES_KEPT) -> None:
        self._entries: WeightedLru[tuple[uuid.UUID, uuid.UUID], Entry] = WeightedLru(resources)
        # The same entries by their desired state, for code that holds only that (a stack's end).
        self._by_desired: dict[int, Entry] = {}

    async def get(self, conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID) -> desired.Desired:
        return (await self.entry(conn, stack, template_id)).desired

    async def entry(self, conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID) -> Entry:
        key = (stack.id, template_id)
        found = self._entries.get(key)
        if found is not None:
            return found
        raw = await templates.get(conn, template_id)
        loaded = desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                              stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)
        heavy, heavy_outputs = evaluation.heavy_resources(loaded), evaluation.heavy_outputs(loaded)
        source = evaluation.Source.of((str(stack.id), str(template_id)), raw, stack_name=stack.name,
                                      project_id=stack.project) if heavy or heavy_outputs else None
        entry = Entry(loaded, heavy, heavy_outputs, source, stack.project)
        self._by_desired[id(loaded)] = entry
        for gone in self._entries.put(key, entry, _size(loaded)):
            self._by_desired.pop(id(gone.desired), None)
        return entry

    def entry_for(self, want: desired.Desired) -> Entry | None:
        """The entry of a desired state this cache loaded (None if it has gone since)."""
        found = self._by_desired.get(id(want))
        return found if found is not None and found.desired is want else None


def _size(want: desired.Desired) -> int:
    try:
        return len(want.template.resources_section)
    except TemplateError:
        return 1
