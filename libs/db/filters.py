"""A WHERE clause built a condition at a time, with its positional arguments numbered as they come."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any


@dataclasses.dataclass
class Where:
    conditions: list[str] = dataclasses.field(default_factory=list)
    args: list[Any] = dataclasses.field(default_factory=list)

    def param(self, value: Any) -> str:
        """Bind ``value`` as the next argument; its placeholder (``$n``) for the SQL text."""
        self.args.append(value)
        return f"${len(self.args)}"

    def add(self, condition: str) -> None:
        self.conditions.append(condition)

    def any_of(self, column: str, values: Sequence[Any]) -> None:
        self.add(f"{column} = ANY({self.param(values)})")

    def status_any_of(self, values: Sequence[str]) -> None:
        """Heat filters status on either half: "COMPLETE" matches as "CREATE_COMPLETE" does."""
        n = self.param(values)
        self.add(f"(status = ANY({n}) OR action || '_' || status = ANY({n}))")

    def sql(self) -> str:
        # No condition at all matches every row, rather than leaving a bare WHERE.
        return " AND ".join(self.conditions) or "TRUE"
