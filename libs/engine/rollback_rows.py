"""Which row of each name a rollback goes back to: Heat's best existing resource.

Heat's convergence picks, for every resource name, the existing resource that suits the
traversal best (``Stack._get_best_existing_rsrc_db``): a failed one loses much, one being
deleted more, one already replaced a little; one made from the template the traversal
converges to gains most, the stack's current one some; the newest wins a tie. So a rollback
after a replacement that completed goes back to the resource it replaced, if that one is
still there, rather than replacing the replacement once more. Pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from libs.engine.status import Action, Status


@dataclasses.dataclass(frozen=True)
class Candidate:
    """What the choice needs to know of one row."""

    id: int
    name: str
    is_current: bool
    action: str
    status: str
    template_id: str | None
    # Whether another row replaces it.
    replaced: bool


def _suits(row: Candidate, template_id: str) -> tuple[int, int]:
    score = 0
    if row.status == Status.FAILED:
        score -= 30
    if row.action == Action.DELETE:
        score -= 50
    if row.replaced:
        score -= 1
    if row.is_current:
        score += 5  # the stack's current resource of that name
    if row.template_id == template_id:
        score += 10  # made from the template the rollback goes back to
    return score, row.id


def swaps(rows: Iterable[Candidate], template_id: str) -> list[tuple[int, int]]:
    """(current row, the row to make current instead), for each name whose best row is another.

    Rows never made (``INIT``) are no candidates.
    """
    by_name: dict[str, list[Candidate]] = {}
    for row in rows:
        if row.action != Action.INIT:
            by_name.setdefault(row.name, []).append(row)
    out = []
    for candidates in by_name.values():
        current = [r for r in candidates if r.is_current]
        if len(candidates) < 2 or len(current) != 1:
            continue
        best = max(candidates, key=lambda r: _suits(r, template_id))
        if best.id != current[0].id:
            out.append((current[0].id, best.id))
    return out
