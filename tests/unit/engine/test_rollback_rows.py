"""Which row a rollback goes back to (libs.engine.rollback_rows): tables, no database."""

from __future__ import annotations

from typing import Any

import pytest

from libs.engine.rollback_rows import Candidate, swaps

BACK = "t1"  # the template the rollback goes back to
FAILED_UPDATE = "t2"


def _row(id: int, **over: Any) -> Candidate:
    base: dict[str, Any] = dict(id=id, name="r", is_current=False, action="CREATE", status="COMPLETE",
                                template_id=BACK, replaced=False)
    return Candidate(**{**base, **over})


@pytest.mark.parametrize(("case", "rows", "expected"), [
    ("a replacement that completed: back to the row it replaced",
     [_row(1, replaced=True), _row(2, is_current=True, template_id=FAILED_UPDATE)], [(2, 1)]),
    ("a replacement that failed never became current: nothing to change",
     [_row(1, is_current=True, replaced=True), _row(2, status="FAILED", template_id=FAILED_UPDATE)], []),
    ("the replaced row was being deleted: the replacement stays",
     [_row(1, action="DELETE", status="IN_PROGRESS", replaced=True),
      _row(2, is_current=True, template_id=FAILED_UPDATE)], []),
    ("the replaced row's delete failed: the replacement stays",
     [_row(1, action="DELETE", status="FAILED", replaced=True),
      _row(2, is_current=True, template_id=FAILED_UPDATE)], []),
    ("one row of its name: nothing to choose", [_row(1, is_current=True, template_id=FAILED_UPDATE)], []),
    ("a row never made is no candidate",
     [_row(1, action="INIT", template_id=None), _row(2, is_current=True, template_id=FAILED_UPDATE)], []),
    ("each name on its own",
     [_row(1, replaced=True), _row(2, is_current=True, template_id=FAILED_UPDATE),
      _row(3, name="s", is_current=True)], [(2, 1)]),
])
def test_which_row_a_rollback_goes_back_to(case: str, rows: list[Candidate],
                                           expected: list[tuple[int, int]]) -> None:
    assert swaps(rows, BACK) == expected, case
