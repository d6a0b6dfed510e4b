"""Traversal graphs: update nodes forward, cleanup nodes backwards, replaced rows last."""

from __future__ import annotations

import pytest

from libs.engine.plan import Row, TraversalGraph, build, parse_node, rows_to_add
from libs.engine.status import Action


def _order(graph: TraversalGraph) -> list[str]:
    """A run of the traversal: repeatedly take ready nodes (sorted, for determinism)."""
    waiting = {k: n.waiting_on for k, n in graph.nodes.items()}
    done: list[str] = []
    ready = sorted(k for k, w in waiting.items() if w == 0)
    while ready:
        node = ready.pop(0)
        done.append(node)
        for succ in graph.nodes[node].successors:
            waiting[succ] -= 1
            if waiting[succ] == 0:
                ready.append(succ)
        ready.sort()
    assert len(done) == len(graph.nodes), "every node runs"
    return done


def _before(order: list[str], first: str, then: str) -> bool:
    return order.index(first) < order.index(then)


def test_create_follows_the_template_forward() -> None:
    rows = [Row(1, "net", True), Row(2, "subnet", True), Row(3, "server", True)]
    graph = build(Action.CREATE, {"net": [], "subnet": ["net"], "server": ["subnet", "net"]}, rows,
                  new_ids=frozenset({1, 2, 3}))
    assert set(graph.nodes) == {"1:u", "2:u", "3:u"}
    assert graph.ready() == ["1:u"]
    order = _order(graph)
    assert _before(order, "1:u", "2:u") and _before(order, "2:u", "3:u")


def test_delete_runs_cleanup_backwards() -> None:
    rows = [Row(1, "net", True), Row(2, "subnet", True, (1,)), Row(3, "server", True, (2, 1))]
    graph = build(Action.DELETE, {}, rows)
    assert set(graph.nodes) == {"1:c", "2:c", "3:c"}
    assert graph.ready() == ["3:c"]
    order = _order(graph)
    assert _before(order, "3:c", "2:c") and _before(order, "2:c", "1:c")


def test_update_removes_after_dependents_moved_and_adds_forward() -> None:
    # "old" leaves the template; "app" used to need it and now needs "new".
    rows = [Row(1, "old", True), Row(2, "app", True, (1,)), Row(3, "new", True)]
    graph = build(Action.UPDATE, {"new": [], "app": ["new"]}, rows, new_ids=frozenset({3}))
    order = _order(graph)
    assert "3:c" not in graph.nodes  # a new row has nothing to clean up
    assert _before(order, "3:u", "2:u")       # app after what it needs now
    assert _before(order, "2:u", "2:c")       # each row cleaned after it converged
    assert _before(order, "2:c", "1:c")       # old deleted after its dependent moved on


def test_a_replaced_row_is_cleaned_after_the_current_one_converged() -> None:
    # Row 1 was replaced by row 4 (failed or finished earlier); row 2 depends on "db".
    rows = [Row(1, "db", False), Row(4, "db", True), Row(2, "web", True, (1,))]
    graph = build(Action.UPDATE, {"db": [], "web": ["db"]}, rows)
    order = _order(graph)
    assert _before(order, "4:u", "1:c")
    assert _before(order, "2:c", "1:c")


@pytest.mark.parametrize(("action", "kind"), [("SUSPEND", "c"), ("RESUME", "u"), ("CHECK", "u")])
def test_lifecycle_actions_visit_current_rows(action: str, kind: str) -> None:
    rows = [Row(1, "a", True), Row(2, "b", True, (1,)), Row(3, "b", False)]
    graph = build(Action(action), {}, rows)
    assert {parse_node(k) for k in graph.nodes} == {(1, kind), (2, kind)}
    order = _order(graph)
    if kind == "c":
        assert _before(order, "2:c", "1:c")  # suspend dependents first
    else:
        assert _before(order, "1:u", "2:u")  # resume what others need first


def test_rows_to_add_only_for_names_without_a_current_row() -> None:
    rows = [Row(1, "a", True), Row(2, "b", False)]
    assert rows_to_add(["a", "b", "c"], rows) == ["b", "c"]


def test_a_layered_10k_graph_builds_quickly_enough_for_a_test() -> None:
    requires = {f"r{layer}_{i}": ([f"r{layer - 1}_{i % 1000}"] if layer else [])
                for layer in range(10) for i in range(1000)}
    rows = [Row(i + 1, name, True) for i, name in enumerate(requires)]
    graph = build(Action.CREATE, requires, rows, new_ids=frozenset(r.id for r in rows))
    assert len(graph.nodes) == 10_000
    assert len(graph.ready()) == 1000


def test_settled_rows_get_no_node_and_nothing_waits_for_them() -> None:
    # net and subnet stay as they are; server changes; "gone" leaves the template.
    rows = [Row(1, "net", True), Row(2, "subnet", True, (1,)), Row(3, "server", True, (2,)),
            Row(4, "gone", True, (1,))]
    graph = build(Action.UPDATE, {"net": [], "subnet": ["net"], "server": ["subnet"]}, rows,
                  settled=frozenset({1, 2}))
    assert set(graph.nodes) == {"3:u", "3:c", "4:c"}
    assert sorted(graph.ready()) == ["3:u", "4:c"]
    order = _order(graph)
    assert _before(order, "3:u", "3:c")


def test_settled_rows_left_out_give_the_graph_they_give_when_listed() -> None:
    # The planner leaves out the rows it settled as written (and their names): the same graph.
    rows = [Row(1, "net", True), Row(2, "subnet", True, (1,)), Row(3, "server", True, (2,)),
            Row(4, "gone", True, (1,))]
    requires = {"net": [], "subnet": ["net"], "server": ["subnet"]}
    listed = build(Action.UPDATE, requires, rows, settled=frozenset({1, 2}))
    left_out = build(Action.UPDATE, {"server": ["subnet"]}, rows[2:], settled=frozenset({1, 2}))
    assert dict(left_out.nodes) == dict(listed.nodes)
    assert left_out.ready() == listed.ready()


def test_an_old_row_of_a_settled_name_is_cleaned_up_at_once() -> None:
    # Row 1 is a failed replacement left over; row 2 is the current "app", unchanged.
    rows = [Row(1, "app", False), Row(2, "app", True)]
    graph = build(Action.UPDATE, {"app": []}, rows, settled=frozenset({2}))
    assert set(graph.nodes) == {"1:c"}
    assert graph.ready() == ["1:c"]
