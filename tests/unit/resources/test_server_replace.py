"""A server's replacement frees the old server's ports before it boots (Heat's prepare_for_replace)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.steps import Call, Failed, Replaced
from tests.unit.resources.cloud_support import NOT_FOUND, call_of, ctx_for, error, methods, ok, run
from tests.unit.resources.resource_support import plugin

SERVER = plugin("OS::Nova::Server")
PROPS = SERVER.validate({"flavor": "m1.small", "image": "cirros", "networks": [{"port": "p1"}]},
                        resource_name="r1")
OLD = Replaced(physical_id="old", properties=PROPS, data={})
LOOKUPS = ["find_flavor", "find_image"]
BOUND = ok([{"id": "p1"}, {"id": "p2"}])


def _ctx(replaces: Replaced | None = OLD) -> Any:
    return dataclasses.replace(ctx_for(PROPS), replaces=replaces)


def test_the_old_servers_ports_are_detached_and_waited_for_before_the_create() -> None:
    results, final = run(SERVER, Action.CREATE, _ctx(), [
        {"replaced_server": ok({"status": "ACTIVE"}), "replaced_ports": BOUND},
        {"detach_0": ok(), "detach_1": NOT_FOUND},  # a port already gone is free
        {"replaced_ports": ok([{"id": "p1"}])},  # Nova detaches in its own time
        {"replaced_ports": ok([])}])
    assert methods(results[0]) == ["get_server", "ports"]
    assert call_of(results[0], "ports").kwargs == {"device_id": "old"}
    assert methods(results[1]) == ["delete_server_interface", "delete_server_interface"]
    assert [(c.args, c.kwargs) for c in results[1].calls] == [  # type: ignore[union-attr]
        (("p1",), {"server": "old"}), (("p2",), {"server": "old"})]
    assert methods(results[2]) == ["ports"] and methods(results[3]) == ["ports"]
    assert isinstance(results[3], Call) and results[3].delay > 0
    # Freed: the create proper (it looks for a half-made server of its own first: a step ran).
    assert methods(results[4]) == [*LOOKUPS, "servers"]
    assert final.data["freed"] == "1" and "freeing" not in final.data


@pytest.mark.parametrize(("server", "ports"), [
    (NOT_FOUND, BOUND),  # gone: nothing to free
    (ok({"status": "ERROR"}), BOUND),  # Nova detaches nothing from a server in ERROR (nor does Heat ask)
    (ok({"status": "ACTIVE"}), ok([])),  # no ports
])
def test_nothing_to_detach_goes_straight_to_the_create(server: Any, ports: Any) -> None:
    results, final = run(SERVER, Action.CREATE, _ctx(), [
        {"replaced_server": server, "replaced_ports": ports}])
    assert methods(results[1])[:2] == LOOKUPS and final.data["freed"] == "1"


@pytest.mark.parametrize("replaces", [None, Replaced(physical_id=None, properties=PROPS, data={})])
def test_a_create_that_replaces_no_server_frees_nothing(replaces: Replaced | None) -> None:
    assert methods(SERVER.start(Action.CREATE, _ctx(replaces))) == LOOKUPS


def test_lost_answers_are_asked_again_and_a_refused_detach_fails() -> None:
    results, _ = run(SERVER, Action.CREATE, _ctx(), [
        None, {"replaced_server": ok({"status": "ACTIVE"}), "replaced_ports": BOUND},
        {"detach_0": error(ErrorKind.CONFLICT, "Cannot detach", 409, "ConflictException"),
         "detach_1": ok()}])
    assert methods(results[1]) == ["get_server", "ports"]
    assert isinstance(results[3], Failed) and results[3].message == "Cannot detach"


def test_a_started_again_create_does_not_free_twice() -> None:
    ctx = dataclasses.replace(_ctx(), data={"freed": "1", "phase": "lookup"})
    assert methods(SERVER.start(Action.CREATE, ctx)) == [*LOOKUPS, "servers"]
