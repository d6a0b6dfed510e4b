"""A traversal's graph: which nodes run, in which order, from the template and the rows.

Two kinds of node per resource row, as in Heat's convergence: ``<id>:u``
converges the row to the template (create, update, replace, check, resume)
and ``<id>:c`` cleans up (delete what left the template or was replaced,
suspend). Update nodes follow the template's dependencies forward; cleanup
nodes follow the rows' recorded dependencies backwards, so a dependent is
deleted before what it needs, and after the dependents that stay have moved on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping

from libs.engine.keys import NodeKey, NodeKind
from libs.engine.status import Action
from libs.graph.dag import Graph


def update_node(resource_id: int) -> str:
    return str(NodeKey(resource_id, NodeKind.UPDATE))


def cleanup_node(resource_id: int) -> str:
    return str(NodeKey(resource_id, NodeKind.CLEANUP))


def parse_node(node: str) -> tuple[int, NodeKind]:
    key = NodeKey.parse(node)
    return key.resource_id, key.kind


@dataclasses.dataclass(frozen=True)
class Row:
    """What the planner needs to know of an existing resource row."""

    id: int
    name: str
    is_current: bool
    requires: tuple[int, ...] = ()


@dataclasses.dataclass(frozen=True)
class Node:
    key: str
    waiting_on: int
    successors: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class TraversalGraph:
    nodes: Mapping[str, Node]

    def ready(self) -> list[str]:
        """Nodes with nothing to wait for: the first wave."""
        if isinstance(self.nodes, Nodes):
            return self.nodes.ready()
        return [key for key, node in self.nodes.items() if node.waiting_on == 0]


class Nodes(Mapping[str, Node]):
    """A traversal's nodes as :func:`build` makes them: most have no edge at all.

    A group of 10^6 members is 10^6 nodes that wait on nothing and release
    nothing; held as a ``Node`` each, with the graph they were derived from, the
    planner needed over 1 GB for them. Here a node without an edge is its key
    alone, and its ``Node`` is made when it is read.
    """

    def __init__(self, order: dict[str, None], linked: dict[str, Node]) -> None:
        self._order = order  # every node, in the order the plan met them
        self._linked = linked  # the nodes with an edge in or out

    def __getitem__(self, key: str) -> Node:
        node = self._linked.get(key)
        if node is not None:
            return node
        if key in self._order:
            return Node(key, 0, ())
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._order

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def ready(self) -> list[str]:
        linked = self._linked
        return [key for key in self._order if key not in linked or linked[key].waiting_on == 0]


def rows_to_add(names: Iterable[str], rows: Iterable[Row]) -> list[str]:
    """Template resources that have no current row yet (new rows start as INIT)."""
    current = {r.name for r in rows if r.is_current}
    return [n for n in names if n not in current]


def build(action: Action, requires: Mapping[str, Iterable[str]], rows: Iterable[Row],
          new_ids: frozenset[int] = frozenset(), *, settled: frozenset[int] = frozenset()
          ) -> TraversalGraph:
    """The graph of one traversal.

    ``requires`` maps each enabled template resource to the names it must come
    after (empty for DELETE and SUSPEND). ``rows`` are every row of the stack,
    those just added for new resources included (their ids in ``new_ids``:
    they have nothing to clean up yet). ``settled`` are current rows the
    planner found unchanged (:mod:`libs.engine.unchanged`): they get no node,
    neither converge nor cleanup, and nothing waits for them. A settled row may
    be left out of ``rows`` and its name out of ``requires`` (a group's 10^6
    members left alone as written): a name required that has no row is one of those.
    """
    rows = list(rows)
    current = {r.name: r for r in rows if r.is_current}
    edges = _Edges()
    node, need = edges.node, edges.need

    if action in (Action.DELETE, Action.SUSPEND):
        wanted = [r for r in rows if action == Action.DELETE or r.is_current]
        ids = {r.id for r in wanted}
        for row in wanted:
            node(cleanup_node(row.id))
            for dep in row.requires:
                if dep in ids:
                    need(cleanup_node(dep), cleanup_node(row.id))
        return edges.graph()

    if action in (Action.RESUME, Action.CHECK):
        by_id = {r.id: r for r in rows if r.is_current}
        for row in by_id.values():
            node(update_node(row.id))
            for dep in row.requires:
                if dep in by_id:
                    need(update_node(row.id), update_node(dep))
        return edges.graph()

    for name, needs in requires.items():
        if current[name].id in settled:
            continue
        me = update_node(current[name].id)
        node(me)
        for other in needs:
            required = current.get(other)
            if required is not None and required.id not in settled:
                need(me, update_node(required.id))
    existing = [r for r in rows if r.id not in new_ids and r.id not in settled]
    existing_ids = {r.id for r in existing}
    for row in existing:
        mine = cleanup_node(row.id)
        node(mine)
        if row.name in requires and current[row.name].id not in settled:
            # Clean up after the name converged: a replaced or failed old row goes
            # only once the current one is in place.
            need(mine, update_node(current[row.name].id))
        for dep in row.requires:
            if dep in existing_ids:
                need(cleanup_node(dep), mine)
    return edges.graph()


class _Edges:
    """The nodes met, in order, and the edges between them (only nodes that have one get a set)."""

    def __init__(self) -> None:
        self.order: dict[str, None] = {}
        self.needs: dict[str, set[str]] = {}

    def node(self, key: str) -> None:
        self.order.setdefault(key)

    def need(self, key: str, first: str) -> None:
        self.order.setdefault(key)
        self.order.setdefault(first)
        self.needs.setdefault(key, set()).add(first)
        self.needs.setdefault(first, set())

    def graph(self) -> TraversalGraph:
        graph = Graph(self.needs)
        graph.topological_order()  # the template's graph was checked; this guards the planner
        linked = {key: Node(key, len(graph.requires(key)), tuple(sorted(graph.required_by(key))))
                  for key in graph}
        return TraversalGraph(Nodes(self.order, linked))
