"""The names of a traversal's nodes: a resource row and what the node does to it.

Stored and sent as text (``"123:u"``, ``"123:c"``); :class:`NodeKey` is what code holds.
"""

from __future__ import annotations

import dataclasses
import enum


class NodeKind(enum.StrEnum):
    """``u`` converges the row to the template; ``c`` cleans it up (delete, suspend)."""

    UPDATE = "u"
    CLEANUP = "c"


@dataclasses.dataclass(frozen=True)
class NodeKey:
    resource_id: int
    kind: NodeKind

    def __str__(self) -> str:
        return f"{self.resource_id}:{self.kind.value}"

    @classmethod
    def parse(cls, text: str) -> NodeKey:
        """The key a node is stored as; ``ValueError`` for anything else."""
        rid, _, kind = text.partition(":")
        if kind not in ("u", "c"):
            raise ValueError(f"not a node key: {text!r}")
        return cls(int(rid), NodeKind(kind))

    @property
    def converges(self) -> bool:
        return self.kind is NodeKind.UPDATE
