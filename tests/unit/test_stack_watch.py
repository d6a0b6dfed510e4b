"""``ember stack watch``'s pure parts: the event-stream parser, the tree kept by events, its drawing."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from libs.api_client import Message, SseParser
from libs.stack_watch import (
    Stack,
    Tree,
    apply,
    changes,
    elapsed,
    merge,
    render,
    rows,
    set_drift,
    set_paused,
)

ROOT = "/v1/demo/stacks/web/11111111-1111-1111-1111-111111111111"
NEST = "/v1/demo/stacks/web-nest-abc/22222222-2222-2222-2222-222222222222"
T0 = datetime.datetime(2026, 11, 24, 12, 0, 0, tzinfo=datetime.UTC)


@pytest.mark.parametrize(("chunks", "expected"), [
    ([b"id: 1\nevent: event\ndata: {}\n\n"], [Message("1", "event", "{}")]),
    # a line cut across chunks, a CRLF, and a keepalive comment
    ([b"id: 2\r\nev", b"ent: event\ndata: {\"a\"", b": 1}\n", b"\n: keepalive\n\n"],
     [Message("2", "event", '{"a": 1}')]),
    ([b"data: x\ndata: y\n\n"], [Message("", "message", "x\ny")]),
    ([b": only a comment\n\n"], []),
    ([b"id: 3\nevent: event\ndata: {}\n"], []),  # not ended by a blank line yet
])
def test_sse_parser(chunks: list[bytes], expected: list[Message]) -> None:
    parser = SseParser()
    assert [m for chunk in chunks for m in parser.feed(chunk)] == expected


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.9, "59s"), (61, "1m01s"), (3725, "1h02m"),
                                               (-3, "0s")])
def test_elapsed(seconds: float, text: str) -> None:
    assert elapsed(seconds) == text


def _item(name: str, status: str, stack: str = ROOT, nested: str | None = None,
          physical: str = "") -> dict[str, Any]:
    links = [{"rel": "stack", "href": f"http://h{stack}"}]
    if nested:
        links.append({"rel": "nested", "href": f"http://h{nested}"})
    return {"resource_name": name, "resource_type": "OS::Heat::TestResource", "resource_status": status,
            "physical_resource_id": physical, "links": links, "updated_time": T0.isoformat()}


def _event(name: str, status: str, reason: str = "", physical: str = "", seconds: int = 0) -> dict[str, Any]:
    return {"resource_name": name, "resource_status": status, "resource_status_reason": reason,
            "physical_resource_id": physical, "resource_type": "OS::Heat::TestResource",
            "event_time": (T0 + datetime.timedelta(seconds=seconds)).isoformat()}


def _tree() -> Tree:
    tree = Tree(root=ROOT, name="web", stacks={ROOT: Stack(ROOT)})
    added = merge(tree, [_item("b", "CREATE_COMPLETE", physical="pb"),
                         _item("nest", "CREATE_COMPLETE", nested=NEST, physical=NEST.rsplit("/", 1)[1]),
                         _item("deep", "CREATE_COMPLETE", stack=NEST, physical="pd"),
                         _item("a10", "CREATE_COMPLETE"), _item("a2", "CREATE_COMPLETE")])
    assert added == [NEST]
    return tree


def test_a_listing_becomes_a_tree_drawn_nested_and_in_natural_order() -> None:
    tree = _tree()
    tree.status = "CREATE_COMPLETE"
    assert [r.key for r in rows(tree, T0)] == ["", "a2", "a10", "b", "nest", "nest/deep"]
    assert render(tree, T0) == [
        "web  CREATE_COMPLETE",
        "├─ a2       OS::Heat::TestResource  CREATE_COMPLETE",
        "├─ a10      OS::Heat::TestResource  CREATE_COMPLETE",
        "├─ b        OS::Heat::TestResource  CREATE_COMPLETE",
        "└─ nest     OS::Heat::TestResource  CREATE_COMPLETE",
        "   └─ deep  OS::Heat::TestResource  CREATE_COMPLETE",
    ]


def test_events_move_a_resource_through_a_pause_with_its_elapsed_time() -> None:
    tree = _tree()
    waiting = "UPDATE paused until Hook pre-update is cleared"
    reached = apply(tree, NEST, _event("deep", "CREATE_COMPLETE", waiting))
    assert reached.refresh and reached.lookup is None
    set_paused(tree, {"stack_status": "UPDATE_IN_PROGRESS", "stack_status_reason": "Paused at breakpoints: "
                      "nest/deep", "ember_paused": [{"resource": "nest/deep", "hook": "pre-update",
                                                     "since": T0.isoformat()}]})
    [deep] = [r for r in rows(tree, T0 + datetime.timedelta(seconds=75)) if r.key == "nest/deep"]
    assert (deep.marker, deep.elapsed) == ("⏸ pre-update", "1m15s")

    cleared = apply(tree, NEST, _event("deep", "CREATE_COMPLETE", "Hook pre-update is cleared", seconds=80))
    assert cleared.refresh and "nest/deep" not in tree.paused
    apply(tree, NEST, _event("deep", "UPDATE_IN_PROGRESS", "state changed", seconds=81))
    apply(tree, NEST, _event("deep", "UPDATE_COMPLETE", "state changed", seconds=84))
    [deep] = [r for r in rows(tree, T0 + datetime.timedelta(seconds=600)) if r.key == "nest/deep"]
    assert (deep.status, deep.marker, deep.elapsed) == ("UPDATE_COMPLETE", "", "3s")


def test_a_new_physical_id_asks_for_one_look_unless_the_type_is_known_to_nest_nothing() -> None:
    tree = _tree()
    # "b" was listed settled with an id and nothing nested: its type nests nothing.
    assert tree.leaf_types == {"OS::Heat::TestResource"}
    tree.leaf_types.clear()
    assert apply(tree, ROOT, _event("fresh", "CREATE_COMPLETE", physical="p1")).lookup == "fresh"
    tree.leaf_types.add("OS::Heat::TestResource")
    assert apply(tree, ROOT, _event("other", "CREATE_COMPLETE", physical="p2")).lookup is None


def test_the_stacks_own_event_sets_its_status_and_a_settled_stack_pauses_nowhere() -> None:
    tree = _tree()
    set_paused(tree, {"stack_status": "UPDATE_IN_PROGRESS",
                      "ember_paused": [{"resource": "b", "hook": "pre-update", "since": T0.isoformat()}]})
    assert list(tree.paused) == ["b"]
    apply(tree, ROOT, _event("web", "UPDATE_FAILED", "Resource UPDATE failed: Hook pre-update timed out",
                             physical=ROOT.rsplit("/", 1)[1]))
    assert (tree.status, tree.paused) == ("UPDATE_FAILED", {})
    assert render(tree, T0)[0] == "web  UPDATE_FAILED  Resource UPDATE failed: Hook pre-update timed out"


def test_changes_print_a_line_per_changed_row_and_not_for_time_passing() -> None:
    tree = _tree()
    first, seen = changes({}, rows(tree, T0))
    assert first[1:] == ["a2  CREATE_COMPLETE", "a10  CREATE_COMPLETE", "b  CREATE_COMPLETE",
                         "nest  CREATE_COMPLETE", "nest/deep  CREATE_COMPLETE"]
    assert changes(seen, rows(tree, T0 + datetime.timedelta(hours=1)))[0] == []
    apply(tree, ROOT, _event("b", "UPDATE_IN_PROGRESS", seconds=1))
    apply(tree, ROOT, _event("b", "UPDATE_COMPLETE", seconds=4))
    assert changes(seen, rows(tree, T0))[0] == ["b  UPDATE_COMPLETE  3s"]


def test_drift_is_a_marker_kept_by_its_events_and_the_resources_status_stands() -> None:
    tree = _tree()
    _, seen = changes({}, rows(tree, T0))
    apply(tree, NEST, _event("deep", "CHECK_FAILED", "Resource drift detected: deep is gone from the cloud;"
                             " healing", physical="pd"))
    assert changes(seen, rows(tree, T0))[0] == [
        "nest/deep  CREATE_COMPLETE  ≠ deep is gone from the cloud; healing"]
    assert render(tree, T0)[-1].endswith("CREATE_COMPLETE  ≠ deep is gone from the cloud; healing")
    seen |= changes(seen, rows(tree, T0))[1]
    apply(tree, NEST, _event("deep", "CHECK_COMPLETE", "Resource drift resolved: deep agrees with the cloud"
                             " again", physical="pd"))
    # Resolved: the marker goes, and that is a line of its own (unlike a pause that ended).
    assert changes(seen, rows(tree, T0))[0] == ["nest/deep  CREATE_COMPLETE"]
    seen |= changes(seen, rows(tree, T0))[1]
    apply(tree, NEST, _event("deep", "CHECK_FAILED", "Resource drift detected: deep is gone from the cloud;"
                             " healing", physical="pd"))
    apply(tree, NEST, _event("deep", "CHECK_COMPLETE", "Resource drift resolved: deep was made again",
                             physical="pe"))  # a heal replaced it
    assert [r.marker for r in rows(tree, T0) if r.key == "nest/deep"] == [""]


@pytest.mark.parametrize(("record", "marker"), [
    ({"resource_name": "b", "kind": "gone", "fields": [], "detail": "", "action_taken": "reported",
      "resolved_at": None}, "≠ b is gone from the cloud"),
    ({"resource_name": "b", "kind": "changed", "fields": ["metadata", "name"], "detail": "",
      "action_taken": "healing", "resolved_at": None}, "≠ b changed outside Ember: metadata, name; healing"),
    ({"resource_name": "b", "kind": "error", "fields": [], "detail": "boot failed",
      "action_taken": "heal failed", "resolved_at": None},
     "≠ b is in an error state: boot failed; heal failed"),
    ({"resource_name": "b", "kind": "gone", "fields": [], "detail": "", "action_taken": "healed",
      "resolved_at": T0.isoformat()}, ""),
    ({"resource_name": "gone-since", "kind": "gone", "fields": [], "detail": "", "action_taken": "reported",
      "resolved_at": None}, ""),
])
def test_the_drift_route_read_at_the_start_marks_the_drift_still_open(record: dict[str, Any],
                                                                      marker: str) -> None:
    tree = _tree()
    set_drift(tree, ROOT, [record])
    [b] = [r for r in rows(tree, T0) if r.key == "b"]
    assert b.marker == marker
