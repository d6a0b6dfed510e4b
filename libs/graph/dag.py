"""A directed acyclic dependency graph: who requires whom, in which order they can run.

Edges point from a node to what it requires (Heat's ``dependencies.py``
convention). Built once, then read: topological order (Kahn's algorithm,
O(nodes + edges), so 10^6 nodes are fine), the reverse graph for cleanup
order, and the cycle named when there is one.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Hashable, Iterable, Iterator, Mapping
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class CycleError(ValueError):
    """The graph has a cycle; ``cycle`` lists its nodes in order (first == last)."""

    def __init__(self, cycle: list[Any]) -> None:
        super().__init__(" -> ".join(str(n) for n in cycle))
        self.cycle = cycle


class Graph(Generic[K]):
    def __init__(self, requires: Mapping[K, Iterable[K]]) -> None:
        """``requires[n]`` are the nodes ``n`` needs first; every one must be a node too."""
        self._requires: dict[K, frozenset[K]] = {n: frozenset(r) for n, r in requires.items()}
        self._required_by: dict[K, set[K]] = {n: set() for n in self._requires}
        for node, needs in self._requires.items():
            for need in needs:
                if need not in self._required_by:
                    raise KeyError(f"{node!r} requires {need!r}, which is not in the graph")
                self._required_by[need].add(node)

    def __len__(self) -> int:
        return len(self._requires)

    def __contains__(self, node: object) -> bool:
        return node in self._requires

    def __iter__(self) -> Iterator[K]:
        return iter(self._requires)

    def requires(self, node: K) -> frozenset[K]:
        return self._requires[node]

    def required_by(self, node: K) -> frozenset[K]:
        return frozenset(self._required_by[node])

    def edges(self) -> Iterator[tuple[K, K]]:
        for node, needs in self._requires.items():
            for need in needs:
                yield node, need

    def leaves(self) -> list[K]:
        """Nodes that require nothing: where a traversal starts."""
        return [n for n, needs in self._requires.items() if not needs]

    def roots(self) -> list[K]:
        """Nodes nothing requires: where a traversal ends."""
        return [n for n, by in self._required_by.items() if not by]

    def reversed(self) -> Graph[K]:
        """The same graph with every edge turned round (delete dependents first)."""
        return Graph({n: by for n, by in self._required_by.items()})

    def topological_order(self) -> list[K]:
        """Every node after all the nodes it requires; CycleError if impossible."""
        remaining = {n: len(needs) for n, needs in self._requires.items()}
        ready = deque(n for n, count in remaining.items() if count == 0)
        order: list[K] = []
        while ready:
            node = ready.popleft()
            order.append(node)
            for dependent in self._required_by[node]:
                remaining[dependent] -= 1
                if remaining[dependent] == 0:
                    ready.append(dependent)
        if len(order) != len(self._requires):
            stuck = {n for n, count in remaining.items() if count > 0}
            raise CycleError(list(self._cycle_within(stuck)))
        return order

    def _cycle_within(self, stuck: set[K]) -> list[K]:
        # Every stuck node requires another stuck node (else it would have run),
        # so walking requirements inside ``stuck`` must come back to a node seen.
        start = min(stuck, key=repr)
        path: list[K] = []
        seen: dict[K, int] = {}
        node = start
        while node not in seen:
            seen[node] = len(path)
            path.append(node)
            node = min((n for n in self._requires[node] if n in stuck), key=repr)
        cycle = path[seen[node]:]
        return [*cycle, node]

    def find_cycle(self) -> list[K] | None:
        try:
            self.topological_order()
        except CycleError as exc:
            return exc.cycle
        return None
