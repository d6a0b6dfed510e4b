"""The Heat-parity comparison's own parts (tests/heat_parity/cases.py)."""

from __future__ import annotations

from tests.heat_parity.cases import Step, shaped


def _events(*names: str) -> dict[str, object]:
    return {"status": 200, "body": {"events": [
        {"resource_name": name, "resource_status_reason": "started" if name == "N" else "changed",
         "id": f"id-{name}"} for name in names]}}


def test_sort_runs_sorts_neighbours_equal_in_the_key_and_keeps_the_runs_in_order() -> None:
    step = Step("GET", "/events", check=["body.events"], ignore=["body.events.*.id"],
                sort_runs={"body.events": "resource_status_reason"})
    one = shaped(step, _events("N", "4", "3", "N", "1", "2", "N", "0"))
    other = shaped(step, _events("N", "3", "4", "N", "2", "1", "N", "0"))
    assert one == other
    assert [e["resource_name"] for e in one["body.events"]] == ["N", "3", "4", "N", "1", "2", "N", "0"]
    # A member in another batch is a difference.
    assert shaped(step, _events("N", "4", "1", "N", "3", "2", "N", "0")) != one


def test_sort_runs_leaves_a_missing_path_alone() -> None:
    step = Step("GET", "/events", sort_runs={"body.events": "resource_status_reason"})
    assert shaped(step, {"status": 404, "body": None}) == {"status": 404, "body": None}
