"""Desired states by (stack, template): parsed once per worker process, then reused.

A template id names an immutable desired state, so an entry never goes stale;
the bound keeps a long-running worker's memory flat.
"""

from __future__ import annotations

import collections
import uuid

from libs.db import Conn, stacks, templates
from libs.engine import desired


class DesiredCache:
    def __init__(self, size: int = 64) -> None:
        self._size = size
        self._entries: collections.OrderedDict[tuple[uuid.UUID, uuid.UUID], desired.Desired] = (
            collections.OrderedDict())

    async def get(self, conn: Conn, stack: stacks.StackRow, template_id: uuid.UUID) -> desired.Desired:
        key = (stack.id, template_id)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            return found
        raw = await templates.get(conn, template_id)
        loaded = desired.load(raw.template, raw.files, raw.environment, stack_name=stack.name,
                              stack_id=str(stack.id), project_id=stack.project, facade=raw.facade)
        self._entries[key] = loaded
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return loaded
