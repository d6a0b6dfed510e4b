"""``ember stack watch``: a stack's resources as a live tree, kept by its event streams.

The tree is read once (``resources?nested_depth``) and then kept by events: the
api streams one stack's events, so there is one stream per stack in the tree,
each started after the last event read before the tree was (so that no event
falls between the two). A nested stack made while watching is found by one
look at the resource whose event first carries its id. Paused markers come from
the stack show's ``ember_paused``, read again only when an event says that a
hook was reached or cleared. Drift the observer saw is a marker on the resource
(``≠ web is gone from the cloud``): read once per stack from its drift route, then
kept by the drift events (which leave the resource's own status as it was).
Rendering is a pure function of the tree: on a terminal the tree is redrawn,
elsewhere one line is printed per change.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import re
import shutil
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple, TextIO
from urllib.parse import quote, unquote, urlsplit

from libs.api_client import Api, EventStreams, parse_time
from libs.engine.drift import DETECTED, RESOLVED, Drift, DriftKind, Response

PAUSED = "⏸"
DRIFTED = "≠"
REDRAW_SECONDS = 0.1


@dataclasses.dataclass
class Node:
    name: str
    type: str
    status: str
    reason: str = ""
    physical: str = ""
    started: datetime.datetime | None = None  # when its current action began, if seen
    ended: datetime.datetime | None = None
    nested: str | None = None  # the path of the stack it nests
    drift: str = ""  # what the observer saw differ in the cloud, while that lasts


@dataclasses.dataclass
class Stack:
    path: str  # /v1/{project}/stacks/{name}/{id}
    owner: tuple[str, str] | None = None  # (parent stack path, resource name)
    nodes: dict[str, Node] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Paused:
    hook: str
    since: datetime.datetime | None


@dataclasses.dataclass
class Tree:
    root: str
    name: str
    status: str = ""
    reason: str = ""
    max_depth: int = 5
    stacks: dict[str, Stack] = dataclasses.field(default_factory=dict)
    paused: dict[str, Paused] = dataclasses.field(default_factory=dict)  # by resource path from the root
    # Types seen settled with a physical id and no nested stack: their events need no look for one.
    leaf_types: set[str] = dataclasses.field(default_factory=set)

    def depth(self, path: str) -> int:
        owner, found = self.stacks[path].owner, 0
        while owner is not None:
            found += 1
            owner = self.stacks[owner[0]].owner
        return found


class Effect(NamedTuple):
    refresh: bool = False  # a hook was reached or cleared: read the paused nodes again
    lookup: str | None = None  # a resource whose new physical id may be a nested stack


class Row(NamedTuple):
    key: str  # the resource's path from the root stack; "" is the stack itself
    lead: str  # the tree's drawing before the name
    name: str
    type: str
    status: str
    marker: str
    elapsed: str
    reason: str


def elapsed(seconds: float) -> str:
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def stack_id(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def stack_name(path: str) -> str:
    return unquote(path.rstrip("/").rsplit("/", 2)[-2])


def link(item: dict[str, Any], rel: str) -> str | None:
    """The path of an item's link (the api's links are absolute, with the host it was asked by)."""
    for entry in item.get("links") or []:
        if entry.get("rel") == rel and entry.get("href"):
            return urlsplit(str(entry["href"])).path
    return None


_HOOK_ENDED = re.compile(r"Hook (\S+) (?:is cleared|timed out)")


def is_hook_reason(reason: str) -> bool:
    """Heat's words for a hook reached, cleared or (Ember's) timed out."""
    return "paused until Hook" in reason or _HOOK_ENDED.fullmatch(reason) is not None


def _settled(status: str) -> bool:
    return status.endswith(("_COMPLETE", "_FAILED"))


def resource_path(tree: Tree, path: str, name: str) -> str:
    """A resource's path from the root stack (``nest/deep``), as ``ember_paused`` names it."""
    parts, owner = [name], tree.stacks[path].owner
    while owner is not None:
        parts.append(owner[1])
        owner = tree.stacks[owner[0]].owner
    return "/".join(reversed(parts))


def merge(tree: Tree, listing: list[dict[str, Any]]) -> list[str]:
    """Add a resource listing's stacks and resources to the tree; the paths of the stacks it adds."""
    added: list[str] = []

    def stack(path: str) -> Stack:
        if path not in tree.stacks:
            tree.stacks[path] = Stack(path)
            added.append(path)
        return tree.stacks[path]

    owners: list[tuple[str, str, str]] = []
    for item in listing:
        where = link(item, "stack") or tree.root
        name, status = str(item.get("resource_name", "")), str(item.get("resource_status", ""))
        node = Node(name=name, type=str(item.get("resource_type", "")), status=status,
                    reason=str(item.get("resource_status_reason") or ""),
                    physical=str(item.get("physical_resource_id") or ""), nested=link(item, "nested"))
        if status.endswith("_IN_PROGRESS"):
            node.started = parse_time(item.get("updated_time"))
        stack(where).nodes[name] = node
        if node.nested is not None:
            owners.append((node.nested, where, name))
        elif node.physical and _settled(status) and not status.startswith("DELETE"):
            tree.leaf_types.add(node.type)
    for nested, where, name in owners:  # parents first: an owner's depth is known before its child's
        if nested in tree.stacks or tree.depth(where) < tree.max_depth:
            stack(nested).owner = (where, name)
    return added


def drop(tree: Tree, path: str) -> list[str]:
    """Forget a stack and those nested in it (its owner nests another now); the paths forgotten."""
    gone = [path]
    for other in list(tree.stacks.values()):
        if other.owner is not None and other.owner[0] == path:
            gone += drop(tree, other.path)
    tree.stacks.pop(path, None)
    return gone


def apply(tree: Tree, path: str, event: dict[str, Any]) -> Effect:
    """One event of the stack at ``path`` applied to the tree."""
    stack = tree.stacks.get(path)
    if stack is None:
        return Effect()
    name, status = str(event.get("resource_name", "")), str(event.get("resource_status", ""))
    reason = str(event.get("resource_status_reason") or "")
    physical = str(event.get("physical_resource_id") or "")
    refresh = is_hook_reason(reason)
    if physical == stack_id(path):  # the stack's own event
        if path == tree.root:
            tree.status, tree.reason = status, reason
            if _settled(status):
                tree.paused.clear()  # a settled stack waits nowhere
        return Effect(refresh=refresh)
    node = stack.nodes.setdefault(name, Node(name=name, type=str(event.get("resource_type") or ""),
                                             status=""))
    if reason.startswith((f"{DETECTED}: ", f"{RESOLVED}: ")):
        # The observer's word on the cloud, not an action of the resource: its status stands.
        node.drift = reason.split(": ", 1)[1] if reason.startswith(DETECTED) else ""
        return Effect()
    at = parse_time(event.get("event_time"))
    key = resource_path(tree, path, name)
    ended = _HOOK_ENDED.fullmatch(reason)
    if key in tree.paused and (status != node.status or (ended and tree.paused[key].hook == ended[1])):
        del tree.paused[key]  # it moved on; the show, read again after the batch, has the rest
    if status != node.status:
        if status.endswith("_IN_PROGRESS"):
            node.started, node.ended = at, None
        elif node.status.endswith("_IN_PROGRESS"):
            node.ended = at
        else:
            node.started = node.ended = None
    node.status, node.reason = status, reason
    node.type = str(event.get("resource_type") or node.type)
    lookup = None
    if physical and physical != node.physical:
        node.physical = physical
        nests_it = node.nested is not None and stack_id(node.nested) == physical
        if not nests_it and node.type not in tree.leaf_types and tree.depth(path) < tree.max_depth:
            lookup = name
    return Effect(refresh, lookup)


def set_drift(tree: Tree, path: str, records: list[dict[str, Any]]) -> None:
    """The stack's drift still open, from its drift route, as markers on its resources."""
    stack = tree.stacks.get(path)
    if stack is None:
        return
    for record in records:
        node = stack.nodes.get(str(record.get("resource_name", "")))
        if node is None:
            continue
        if record.get("resolved_at"):
            node.drift = ""
            continue
        seen = Drift(DriftKind(record["kind"]), tuple(record.get("fields") or ()),
                     str(record.get("detail") or ""))
        taken = Response(record.get("action_taken") or Response.REPORTED)
        node.drift = seen.describe(node.name) + taken.said(seen.fields)


def set_paused(tree: Tree, stack: dict[str, Any]) -> None:
    """The stack's status and paused nodes from its show."""
    tree.status = str(stack.get("stack_status") or tree.status)
    tree.reason = str(stack.get("stack_status_reason") or "")
    tree.paused = {str(p["resource"]): Paused(str(p.get("hook", "")), parse_time(p.get("since")))
                   for p in stack.get("ember_paused") or []}


def _natural(name: str) -> list[tuple[int, int | str]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part]


def _row(tree: Tree, key: str, lead: str, node: Node, now: datetime.datetime) -> Row:
    paused = tree.paused.get(key)
    took = ""
    if paused is not None:
        took = elapsed((now - paused.since).total_seconds()) if paused.since else ""
    elif node.started is not None:
        took = elapsed(((node.ended or now) - node.started).total_seconds())
    marker = f"{PAUSED} {paused.hook}" if paused else f"{DRIFTED} {node.drift}" if node.drift else ""
    return Row(key=key, lead=lead, name=node.name, type=node.type, status=node.status,
               marker=marker, elapsed=took,
               reason=node.reason if node.status.endswith("_FAILED") else "")


def head(tree: Tree) -> Row:
    return Row(key="", lead="", name=tree.name, type="", status=tree.status, marker="", elapsed="",
               reason=tree.reason)


def row_of(tree: Tree, path: str, name: str, now: datetime.datetime) -> Row:
    """One resource's row (without the tree's drawing), by the stack it is in and its name."""
    return _row(tree, resource_path(tree, path, name), "", tree.stacks[path].nodes[name], now)


def rows(tree: Tree, now: datetime.datetime) -> Iterator[Row]:
    """The stack, then its resources depth first, each nested stack's under the resource nesting it."""
    yield head(tree)

    def walk(path: str, prefix: str, lead: str) -> Iterator[Row]:
        nodes = sorted(tree.stacks[path].nodes.values(), key=lambda n: _natural(n.name))
        for index, node in enumerate(nodes):
            last = index == len(nodes) - 1
            key = f"{prefix}{node.name}"
            yield _row(tree, key, lead + ("└─ " if last else "├─ "), node, now)
            if node.nested is not None and node.nested in tree.stacks:
                yield from walk(node.nested, f"{key}/", lead + ("   " if last else "│  "))

    if tree.root in tree.stacks:
        yield from walk(tree.root, "", "")


def render(tree: Tree, now: datetime.datetime) -> list[str]:
    """The tree as aligned text lines: stack first, then a line per resource."""
    top, *body = rows(tree, now)
    lines = ["  ".join(p for p in (top.name, top.status, top.reason) if p)]
    width = max((len(r.lead) + len(r.name) for r in body), default=0)
    type_width = max((len(r.type) for r in body), default=0)
    status_width = max((len(r.status) for r in body), default=0)
    for r in body:
        extra = "  ".join(p for p in (r.marker, r.elapsed, r.reason) if p)
        text = f"{r.lead}{r.name}".ljust(width)
        lines.append(f"{text}  {r.type.ljust(type_width)}  {r.status.ljust(status_width)}  {extra}".rstrip())
    return lines


def line(row: Row, *, timed: bool = True) -> str:
    """A row as one line of a log: the stack's as ``stack <name> <status>``, a resource's by its path."""
    if not row.key:
        return "  ".join(p for p in (f"stack {row.name}", row.status, row.reason) if p)
    parts = (row.key, row.status, row.marker, row.reason, row.elapsed if timed else "")
    return "  ".join(p for p in parts if p)


def changes(seen: Mapping[str, Row], candidates: Iterable[Row]) -> tuple[list[str], dict[str, Row]]:
    """The lines of the rows that changed since ``seen`` (each row as last looked at), and those rows."""
    out, updates = [], {}
    for row in candidates:
        # Elapsed time alone is no change: it is printed with the change that ends it.
        before, after = seen.get(row.key), row._replace(lead="", elapsed="")
        if before == after:
            continue
        updates[row.key] = after
        # A pause that ended says little: the action it let go says the rest next.
        if (before is None or not before.marker.startswith(PAUSED) or after.marker
                or after != before._replace(marker="")):
            out.append(line(row, timed=not row.marker and _settled(row.status)))
    return out, updates


class View:
    """Where the tree is shown: redrawn on a terminal, a line per change elsewhere."""

    def __init__(self, out: TextIO, *, tty: bool) -> None:
        self.out, self.tty = out, tty
        self._seen: dict[str, Row] = {}
        self._drawn = 0.0

    def event(self, tree: Tree, path: str, name: str) -> None:
        """One resource's event applied: its line and the stack's if they changed; a terminal is
        redrawn at most every REDRAW_SECONDS (the wait for the next event redraws what is skipped)."""
        if self.tty:
            if time.monotonic() - self._drawn >= REDRAW_SECONDS:
                self._draw(tree)
            return
        self._print([head(tree), row_of(tree, path, name, datetime.datetime.now(datetime.UTC))])

    def everything(self, tree: Tree) -> None:
        """Every row looked at again: redrawn now on a terminal, a line per changed row elsewhere."""
        if self.tty:
            self._draw(tree)
        else:
            self._print(rows(tree, datetime.datetime.now(datetime.UTC)))

    def _print(self, candidates: Iterable[Row]) -> None:
        lines, updates = changes(self._seen, candidates)
        self._seen.update(updates)
        if lines:
            self.out.write("".join(f"{text}\n" for text in lines))
            self.out.flush()

    def _draw(self, tree: Tree) -> None:
        self._drawn = time.monotonic()
        lines, room = render(tree, datetime.datetime.now(datetime.UTC)), shutil.get_terminal_size().lines - 1
        if len(lines) > room:
            lines = [*lines[:room - 1], f"... and {len(lines) - room + 1} more"]
        self.out.write("\x1b[H\x1b[J" + "\n".join(lines) + "\n")
        self.out.flush()


async def follow(api: Api, tree: Tree, streams: EventStreams, path: str, *, until_settled: bool = False
                 ) -> None:
    """Read the subtree at ``path`` and stream the events of each of its stacks after what was read."""
    depth = tree.max_depth - tree.depth(path)
    markers = {path: await api.latest_event(path)}
    listing = await api.resources(path, depth)
    nested = {p for p in (link(item, "stack") for item in listing) if p and p != path}
    if nested:  # their markers before the listing that is kept, as for this stack's
        found = await asyncio.gather(*(api.latest_event(p) for p in nested))
        markers |= dict(zip(nested, found, strict=True))
        listing = await api.resources(path, depth)
    added = merge(tree, listing)
    for stack in [path, *added]:
        set_drift(tree, stack, (await api.call("GET", f"{stack}/drift"))["drift"])
        streams.open(stack, markers.get(stack), until_settled=until_settled and stack == tree.root)


async def _discover(api: Api, tree: Tree, streams: EventStreams, path: str, name: str) -> None:
    """Whether a resource's new physical id is a stack nested in it, and if so, follow that stack."""
    node = tree.stacks[path].nodes[name]
    found = await api.call("GET", f"{path}/resources/{quote(name, safe='')}", missing_ok=True)
    if found is None:
        return  # gone again already: its events say so
    shown = found["resource"]
    nested = link(shown, "nested")
    if nested is None:
        if _settled(node.status) and node.physical:
            tree.leaf_types.add(node.type)
        return
    if node.nested == nested:
        return
    if node.nested is not None:
        await streams.close(drop(tree, node.nested))
    node.nested = nested
    tree.stacks[nested] = Stack(nested, owner=(path, name))
    await follow(api, tree, streams, nested)


async def _read_paused(api: Api, tree: Tree) -> None:
    set_paused(tree, (await api.call("GET", tree.root, params={"resolve_outputs": "false"}))["stack"])


async def watch(api: Api, name_or_id: str, *, until_settled: bool, max_depth: int, out: TextIO,
                tty: bool) -> int:
    """Show the stack until it settles (``until_settled``) or for ever; 1 if it ended FAILED."""
    root = await api.stack_path(name_or_id)
    tree = Tree(root=root, name=stack_name(root), max_depth=max_depth, stacks={root: Stack(root)})
    streams = EventStreams(api)
    view = View(out, tty=tty)
    try:
        await follow(api, tree, streams, root, until_settled=until_settled)
        await _read_paused(api, tree)
        view.everything(tree)
        while True:
            try:  # on a terminal the elapsed times move on between events
                batch = [await asyncio.wait_for(streams.queue.get(), timeout=1.0 if tty else None)]
            except TimeoutError:
                view.everything(tree)
                continue
            while not streams.queue.empty():
                batch.append(streams.queue.get_nowait())
            ended, hooks_moved = False, False
            for kind, path, payload in batch:
                if kind == "error" and path == tree.root:
                    raise payload
                if kind != "event" or path not in tree.stacks:
                    # A nested stack whose stream failed shows as it was; one forgotten shows no more.
                    ended = ended or (kind == "end" and path == tree.root)
                    continue
                effect = apply(tree, path, payload)
                hooks_moved = hooks_moved or effect.refresh
                if effect.lookup is not None:
                    await _discover(api, tree, streams, path, effect.lookup)
                name = str(payload.get("resource_name", ""))
                # The stack's own event may clear every pause, and a discovery may add a subtree.
                if effect.lookup is None and name in tree.stacks[path].nodes:
                    view.event(tree, path, name)
                else:
                    view.everything(tree)
            if hooks_moved:  # once for the whole batch, however many hooks moved in it
                await _read_paused(api, tree)
            if hooks_moved or ended:
                view.everything(tree)
            if ended:
                return 1 if tree.status.endswith("_FAILED") else 0
    finally:
        await streams.close(list(streams.tasks))
