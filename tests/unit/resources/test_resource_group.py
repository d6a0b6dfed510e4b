"""Which members a resource group has for a count and the names removal policies took out."""

from __future__ import annotations

import pytest

from libs.resources.resource_group import member_names


@pytest.mark.parametrize(("count", "removed", "expected"), [
    (3, set(), ["0", "1", "2"]),
    (5, set(), ["0", "1", "2", "3", "4"]),
    (2, set(), ["0", "1"]),  # a shrink drops the highest indices
    (2, {"0"}, ["1", "2"]),  # a removed name goes first and is never used again
    (3, {"0", "2"}, ["1", "3", "4"]),
    (0, {"1"}, []),
])
def test_member_names(count: int, removed: set[str], expected: list[str]) -> None:
    assert member_names(count, removed) == expected
