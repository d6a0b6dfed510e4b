"""Heat's limits with Heat's messages, and the way to lift them."""

from __future__ import annotations

import pytest

from libs.template.errors import RequestLimitExceeded
from libs.template.limits import Limits


@pytest.mark.parametrize(("limit", "count", "ok"), [(1000, 1000, True), (1000, 1001, False),
                                                     (-1, 10**6, True), (0, 1, False)])
def test_resources_per_stack(limit: int, count: int, ok: bool) -> None:
    limits = Limits(max_resources_per_stack=limit)
    if ok:
        limits.check_resource_count(count)
    else:
        with pytest.raises(RequestLimitExceeded) as info:
            limits.check_resource_count(count)
        assert str(info.value) == "Request limit exceeded: Maximum resources per stack exceeded."
        assert info.value.error_type == "RequestLimitExceeded"


def test_nested_depth() -> None:
    limits = Limits()
    assert [limits.check_nested_depth(d) for d in range(5)] == [1, 2, 3, 4, 5]
    with pytest.raises(RequestLimitExceeded, match=r"Recursion depth exceeds 5\.$"):
        limits.check_nested_depth(5)
