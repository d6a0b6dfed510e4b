"""A rollback updates a server whose replacement failed: its ports back first (Heat's restore_prev_rsrc)."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.resources.steps import Action, Call, Failed, Replaced
from tests.unit.resources.cloud_support import NOT_FOUND, call_of, ctx_for, error, methods, ok, run
from tests.unit.resources.resource_support import plugin

SERVER = plugin("OS::Nova::Server")
PROPS = SERVER.validate({"flavor": "m1.small", "image": "cirros",
                         "networks": [{"port": "p1"}, {"network": "private"}]}, resource_name="r1")
# What the replacement took: the template's port, and the one Nova made (deleted on the detach).
TAKEN = [{"id": "p1", "network_id": "net", "fixed_ips": [{"ip_address": "10.0.0.5", "subnet_id": "s"}]},
         {"id": "nova1", "network_id": "net", "fixed_ips": [{"ip_address": "10.0.0.6", "subnet_id": "s"}]}]
FAILED_NEW = Replaced(physical_id="new", properties=PROPS, data={"taken_ports": json.dumps(TAKEN)})
FINISH = ["get_server", "ports"]  # the update proper, with nothing changed: read the server again


def _ctx(replaced_by: Replaced | None = FAILED_NEW, **data: str) -> Any:
    return dataclasses.replace(ctx_for(PROPS, physical_id="old", old_properties=PROPS, data=data),
                               replaced_by=replaced_by)


def _look(held: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the old server holds, and the taken ports as they are: p1 is free, Nova's is gone."""
    return {"restore_own_ports": ok(held or []), "restore_port_0": ok({"id": "p1"}),
            "restore_port_1": NOT_FOUND}


def test_the_ports_go_from_the_failed_replacement_back_to_the_old_server_then_the_update_runs() -> None:
    results, final = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": ok({"status": "BUILD"}), "restore_new_ports": ok([{"id": "p1"}])},
        {"restore_server": ok({"status": "ERROR"}), "restore_new_ports": ok([{"id": "p1"}, {"id": "nova2"}])},
        {"detach_0": ok(), "detach_1": NOT_FOUND},  # gone already: free
        {"restore_new_ports": ok([{"id": "p1"}])},  # Nova detaches in its own time
        {"restore_new_ports": ok([])},
        _look(),
        {"attach_0": ok({"port_id": "p1"}), "attach_1": ok({"port_id": "nova3"})}])
    assert methods(results[0]) == ["get_server", "ports"]
    assert call_of(results[0], "get_server").args == ("new",)
    assert call_of(results[0], "ports").kwargs == {"device_id": "new"}
    # Still building: asked again, later.
    assert methods(results[1]) == ["get_server", "ports"] and results[1].delay > 0  # type: ignore[union-attr]
    # Every interface of the replacement goes, even in ERROR (as Heat detaches).
    assert [(c.method, c.args, c.kwargs) for c in results[2].calls] == [  # type: ignore[union-attr]
        ("delete_server_interface", ("p1",), {"server": "new"}),
        ("delete_server_interface", ("nova2",), {"server": "new"})]
    assert methods(results[3]) == ["ports"] and methods(results[4]) == ["ports"]
    assert results[4].delay > 0  # type: ignore[union-attr]
    assert methods(results[5]) == ["ports", "get_port", "get_port"]
    assert call_of(results[5], "ports").kwargs == {"device_id": "old"}
    # The template's port comes back; Nova's, deleted, is made again on its network, at its address.
    assert [(c.method, c.args, c.kwargs) for c in results[6].calls] == [  # type: ignore[union-attr]
        ("create_server_interface", ("old",), {"port_id": "p1"}),
        ("create_server_interface", ("old",), {"net_id": "net", "fixed_ips": [{"ip_address": "10.0.0.6"}]})]
    assert methods(results[7]) == FINISH
    assert not {"restore_from", "restore_ports", "restore_detaching", "restore_addressed"} & set(final.data)


def test_a_replacement_that_made_no_server_or_is_gone_has_nothing_to_detach() -> None:
    never = dataclasses.replace(FAILED_NEW, physical_id=None)
    assert methods(SERVER.start(Action.UPDATE, _ctx(never))) == ["ports", "get_port", "get_port"]
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": NOT_FOUND, "restore_new_ports": ok([])}])
    assert methods(results[1]) == ["ports", "get_port", "get_port"]


def test_what_the_old_server_holds_already_is_not_attached_twice() -> None:
    # A rollback run again: p1 is back, and a port was made again on the network for Nova's.
    held = [{"id": "p1", "network_id": "net"}, {"id": "nova3", "network_id": "net"}]
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": NOT_FOUND, "restore_new_ports": ok([])}, _look(held)])
    assert methods(results[2]) == FINISH


@pytest.mark.parametrize("replaced_by", [
    None, dataclasses.replace(FAILED_NEW, data={}),  # nothing was taken (the old server in ERROR)
])
def test_an_update_with_nothing_to_take_back_is_the_update_proper(replaced_by: Replaced | None) -> None:
    assert methods(SERVER.start(Action.UPDATE, _ctx(replaced_by))) == FINISH


def test_lost_answers_are_asked_again_and_nothing_is_made_twice() -> None:
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [
        None,
        {"restore_server": ok({"status": "ACTIVE"}), "restore_new_ports": ok([{"id": "p1"}])},
        None, None, {"restore_new_ports": ok([])},
        None, _look(),
        None])  # the attach answers lost: look again
    assert methods(results[1]) == ["get_server", "ports"]
    assert methods(results[3]) == ["ports"] and methods(results[4]) == ["ports"]
    assert methods(results[6]) == ["ports", "get_port", "get_port"]
    assert methods(results[8]) == ["ports", "get_port", "get_port"]


@pytest.mark.parametrize("answers", [
    {"detach_0": error(ErrorKind.CONFLICT, "Cannot detach", 409, "ConflictException")},
    {"attach_0": error(ErrorKind.CONFLICT, "Cannot attach", 409, "ConflictException"), "attach_1": ok()},
])
def test_a_refused_detach_or_attach_fails_the_update_with_the_clouds_message(answers: Any) -> None:
    script: list[Any] = [{"restore_server": ok({"status": "ACTIVE"}),
                          "restore_new_ports": ok([{"id": "p1"}])}]
    if "attach_0" in answers:
        script += [{"detach_0": ok()}, {"restore_new_ports": ok([])}, _look()]
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [*script, answers])
    assert isinstance(results[-1], Failed) and results[-1].message.startswith("Cannot")


def test_an_old_address_another_port_took_meanwhile_gives_the_server_its_network_at_another() -> None:
    taken_address = error(ErrorKind.CONFLICT, "IP address 10.0.0.6 already allocated in subnet s", 409,
                          "ConflictException")
    results, final = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": NOT_FOUND, "restore_new_ports": ok([])}, _look(),
        {"attach_0": ok({"port_id": "p1"}), "attach_1": taken_address},
        {"attach_1": ok({"port_id": "nova3"})}])
    # Only the refused one is asked again, for any address on the network.
    assert [(c.method, c.args, c.kwargs) for c in results[3].calls] == [  # type: ignore[union-attr]
        ("create_server_interface", ("old",), {"net_id": "net"})]
    assert methods(results[4]) == FINISH
    assert "restore_addressed" not in final.data


def test_a_refused_attach_without_addresses_is_not_asked_again() -> None:
    # Refused again for any address: the cloud's message, no third ask.
    taken = error(ErrorKind.CONFLICT, "IP address 10.0.0.6 already allocated", 409, "ConflictException")
    full = error(ErrorKind.CONFLICT, "No more IP addresses available on network net.", 409,
                 "ConflictException")
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": NOT_FOUND, "restore_new_ports": ok([])}, _look(),
        {"attach_0": ok({"port_id": "p1"}), "attach_1": taken}, {"attach_1": full}])
    assert isinstance(results[-1], Failed) and results[-1].message.startswith("No more IP addresses")
    # The template's own port refused (bound elsewhere): asked for no address, so not asked again.
    in_use = error(ErrorKind.CONFLICT, "Port p1 is still in use", 409, "ConflictException")
    results, _ = run(SERVER, Action.UPDATE, _ctx(), [
        {"restore_server": NOT_FOUND, "restore_new_ports": ok([])}, _look(),
        {"attach_0": in_use, "attach_1": ok()}])
    assert isinstance(results[-1], Failed) and results[-1].message.startswith("Port p1")


def test_the_replacement_records_what_it_took_until_it_is_made() -> None:
    # server_replace keeps the detached ports as Neutron showed them, for a rollback to give back.
    old = Replaced(physical_id="old", properties=PROPS, data={})
    ctx = dataclasses.replace(ctx_for(PROPS), replaces=old)
    results, final = run(SERVER, Action.CREATE, ctx, [
        {"replaced_server": ok({"status": "ACTIVE"}), "replaced_ports": ok(TAKEN)},
        {"detach_0": ok(), "detach_1": ok()}])
    assert isinstance(results[1], Call)
    assert json.loads(final.data["taken_ports"]) == [{**p, "mac_address": None} for p in TAKEN]
