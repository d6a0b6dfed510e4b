"""The WHERE builder behind stack and event listing: SQL text and arguments, numbered as they come."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from libs.db import stacks
from libs.db.filters import Where

STATUS_ANY = "(status = ANY({n}) OR action || '_' || status = ANY({n}))"


def _three_filters(where: Where) -> None:
    where.any_of("action", ["CREATE"])
    where.status_any_of(["FAILED"])
    where.any_of("name", ["x"])


CASES: list[tuple[str, Callable[[Where], None], str, list[Any]]] = [
    ("nothing matches every row", lambda w: None, "TRUE", []),
    ("a bare condition binds nothing", lambda w: w.add("deleted_at IS NULL"), "deleted_at IS NULL", []),
    ("one filter", lambda w: w.any_of("name", ["a", "b"]), "name = ANY($1)", [["a", "b"]]),
    ("status on either half, one argument used twice", lambda w: w.status_any_of(["COMPLETE"]),
     STATUS_ANY.format(n="$1"), [["COMPLETE"]]),
    ("arguments number in the order they are bound", _three_filters,
     f"action = ANY($1) AND {STATUS_ANY.format(n='$2')} AND name = ANY($3)",
     [["CREATE"], ["FAILED"], ["x"]]),
    ("a placeholder spliced into a condition", lambda w: w.add(f"tags @> {w.param(['t'])}::text[]"),
     "tags @> $1::text[]", [["t"]]),
]


@pytest.mark.parametrize(("build", "sql", "args"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_where(build: Callable[[Where], None], sql: str, args: list[Any]) -> None:
    where = Where()
    build(where)
    assert (where.sql(), where.args) == (sql, args)


def test_stack_list_where_keeps_heats_filters() -> None:
    query = stacks.ListQuery(project="p", filters={"name": ["a"], "status": ["COMPLETE"]}, tags=["t"])
    where = stacks._where(query)
    assert where.sql() == ("($1::text IS NULL OR project = $1) AND deleted_at IS NULL AND parent_id IS NULL"
                           f" AND name = ANY($2) AND {STATUS_ANY.format(n='$3')} AND tags @> $4::text[]")
    assert where.args == ["p", ["a"], ["COMPLETE"], ["t"]]


def test_stack_list_owner_filter_shows_nested_stacks() -> None:
    owner = str(uuid.UUID(int=1))
    where = stacks._where(stacks.ListQuery(project=None, show_deleted=True, filters={"owner_id": [owner]}))
    assert where.sql() == "($1::text IS NULL OR project = $1) AND parent_id::text = ANY($2)"
    assert where.args == [None, [owner]]
