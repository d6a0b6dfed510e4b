"""The dependency graph: order, reverse order, cycles named."""

from __future__ import annotations

import pytest

from libs.graph.dag import CycleError, Graph


def _position(order: list[str]) -> dict[str, int]:
    return {n: i for i, n in enumerate(order)}


@pytest.mark.parametrize(
    "requires",
    [
        {},
        {"a": []},
        {"net": [], "subnet": ["net"], "port": ["subnet", "net"], "server": ["port"]},
        {"a": [], "b": [], "c": ["a", "b"], "d": ["c"], "e": ["a"]},
    ],
)
def test_every_node_comes_after_what_it_requires(requires: dict[str, list[str]]) -> None:
    graph = Graph(requires)
    order = graph.topological_order()
    assert sorted(order) == sorted(requires)
    pos = _position(order)
    assert all(pos[need] < pos[node] for node, need in graph.edges())
    reverse = _position(graph.reversed().topological_order())
    assert all(reverse[node] < reverse[need] for node, need in graph.edges())


def test_leaves_roots_and_neighbours() -> None:
    graph = Graph({"net": [], "subnet": ["net"], "server": ["subnet"], "volume": []})
    assert sorted(graph.leaves()) == ["net", "volume"]
    assert sorted(graph.roots()) == ["server", "volume"]
    assert graph.required_by("net") == {"subnet"}
    assert graph.requires("server") == {"subnet"}


@pytest.mark.parametrize(
    ("requires", "cycle"),
    [
        ({"a": ["a"]}, ["a", "a"]),
        ({"a": ["b"], "b": ["a"], "c": ["a"]}, ["a", "b", "a"]),
        ({"x": [], "a": ["c"], "b": ["a"], "c": ["b", "x"], "d": ["c"]}, ["a", "c", "b", "a"]),
    ],
)
def test_a_cycle_is_named(requires: dict[str, list[str]], cycle: list[str]) -> None:
    with pytest.raises(CycleError) as info:
        Graph(requires).topological_order()
    assert info.value.cycle == cycle
    assert Graph(requires).find_cycle() == cycle


def test_an_unknown_requirement_is_rejected() -> None:
    with pytest.raises(KeyError, match="'a' requires 'ghost'"):
        Graph({"a": ["ghost"]})


def test_a_layered_graph_of_100k_nodes_orders_in_one_pass() -> None:
    # The engine's benchmark shape: 10 layers, each node needing one of the layer above.
    requires = {f"r{layer}_{i}": ([f"r{layer - 1}_{i % 10_000}"] if layer else [])
                for layer in range(10) for i in range(10_000)}
    order = Graph(requires).topological_order()
    assert len(order) == 100_000
    assert order[0].startswith("r0_") and order[-1].startswith("r9_")
