"""OS::Nova::KeyPair, ServerGroup, Flavor and OS::Glance::WebImage as steps: answers in, results out."""

from __future__ import annotations

from typing import Any

import pytest

from libs.cloud.calls import ErrorKind
from libs.engine.status import Action
from libs.resources.base import OBSERVE_KEY
from libs.resources.steps import Call, Done, Failed
from tests.unit.resources.cloud_support import (
    NOT_FOUND,
    TAG,
    after,
    call_of,
    ctx_for,
    error,
    methods,
    ok,
    run,
)
from tests.unit.resources.resource_support import plugin

KEYPAIR = plugin("OS::Nova::KeyPair")
GROUP = plugin("OS::Nova::ServerGroup")
FLAVOR = plugin("OS::Nova::Flavor")
IMAGE = plugin("OS::Glance::WebImage")


def _creates(results: list[Any], method: str) -> int:
    return sum(methods(r).count(method) for r in results if isinstance(r, Call))


# ---- key pairs ------------------------------------------------------------------------------------

KEY = KEYPAIR.validate({"name": "k1", "save_private_key": True}, resource_name="key")


def test_keypair_keeps_a_generated_private_key() -> None:
    results, final = run(KEYPAIR, Action.CREATE, ctx_for(KEY), [
        {"created": ok({"name": "k1", "public_key": "ssh-rsa AAA", "private_key": "-----BEGIN"})}])
    assert call_of(results[0], "create_keypair").kwargs == {"name": "k1"}
    assert isinstance(results[-1], Done) and final.physical_id == "k1"
    assert KEYPAIR.attribute("private_key", "k1", final.data, KEY) == "-----BEGIN"
    assert KEYPAIR.attribute("public_key", "k1", final.data, KEY) == "ssh-rsa AAA"
    assert KEYPAIR.reference_id("k1", final.data, resource_name="key") == "k1"
    assert "private_key" in KEYPAIR.secret_data
    unsaved = KEYPAIR.validate({"name": "k1"}, resource_name="key")
    assert KEYPAIR.attribute("private_key", "k1", final.data, unsaved) == ""


@pytest.mark.parametrize(("found", "adopted"), [
    ({"found": ok({"name": "k1", "public_key": "ssh-rsa AAA"})}, True),
    ({"found": NOT_FOUND}, False),
])
def test_keypair_lost_create_is_found_by_name(found: dict[str, Any], adopted: bool) -> None:
    results, final = run(KEYPAIR, Action.CREATE, ctx_for(KEY), [None, found])
    assert methods(results[1]) == ["get_keypair"]
    if adopted:
        assert isinstance(results[-1], Done) and final.physical_id == "k1"
    else:
        assert methods(results[-1]) == ["create_keypair"]


def test_keypair_create_conflict_fails_and_changes_replace() -> None:
    taken = error(ErrorKind.CONFLICT, "Key pair 'k1' already exists.", 409, "ConflictException")
    results, _ = run(KEYPAIR, Action.CREATE, ctx_for(KEY), [{"created": taken}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "key") == (
        "Conflict: resources.key: Key pair 'k1' already exists. (HTTP 409)")
    assert KEYPAIR.needs_replace(KEY, KEYPAIR.validate({"name": "k2"}, resource_name="key"))


@pytest.mark.parametrize("answer", [ok(), NOT_FOUND])
def test_keypair_delete(answer: Any) -> None:
    results, _ = run(KEYPAIR, Action.DELETE, ctx_for(KEY, physical_id="k1"), [{"deleted": answer}])
    assert call_of(results[0], "delete_keypair").args == ("k1",)
    assert isinstance(results[-1], Done)


# ---- server groups --------------------------------------------------------------------------------

def test_server_group_create_and_adopt() -> None:
    props = GROUP.validate({"policies": ["affinity"]}, resource_name="grp")
    results, final = run(GROUP, Action.CREATE, ctx_for(props), [{"created": ok({"id": "g1"})}])
    assert call_of(results[0], "create_server_group").kwargs == {"name": "st-r1-abcdefghijkl",
                                                                 "policies": ["affinity"]}
    assert final.physical_id == "g1"
    lost, adopted = run(GROUP, Action.CREATE, ctx_for(props), [
        None, {"found": ok([{"id": "g0", "name": "other"}, {"id": "g2", "name": "st-r1-abcdefghijkl"}])}])
    assert adopted.physical_id == "g2" and _creates(lost, "create_server_group") == 1
    ruled = GROUP.validate({"rules": {"max_server_per_host": 2}}, resource_name="grp")
    assert call_of(GROUP.start(Action.CREATE, ctx_for(ruled)), "create_server_group").kwargs == {
        "name": "st-r1-abcdefghijkl", "policy": "anti-affinity", "rules": {"max_server_per_host": 2}}


# ---- flavors --------------------------------------------------------------------------------------

def test_flavor_create_with_specs_and_private_access() -> None:
    props = FLAVOR.validate({"ram": 512, "vcpus": 1, "extra_specs": {"hw:cpu_policy": "dedicated"},
                             "is_public": False, "tenants": ["p1"]}, resource_name="fl")
    results, final = run(FLAVOR, Action.CREATE, ctx_for(props), [
        {"created": ok({"id": "fl1", "is_public": False})}, {"specs": ok(), "add_0": ok()}])
    assert call_of(results[0], "create_flavor").kwargs == {
        "name": "st-r1-abcdefghijkl", "ram": 512, "vcpus": 1, "disk": 0, "swap": 0, "ephemeral": 0,
        "rxtx_factor": 1.0, "is_public": False}
    assert methods(results[1]) == ["create_flavor_extra_specs", "flavor_add_tenant_access"]
    assert isinstance(results[-1], Done) and final.physical_id == "fl1"
    assert FLAVOR.attribute("is_public", "fl1", final.data, props) is False
    assert FLAVOR.attribute("extra_specs", "fl1", final.data, props) == {"hw:cpu_policy": "dedicated"}


def test_flavor_update_in_place_or_replace() -> None:
    old = FLAVOR.validate({"ram": 512, "vcpus": 1, "extra_specs": {"a": "1", "b": "2"}}, resource_name="fl")
    new = FLAVOR.validate({"ram": 512, "vcpus": 1, "extra_specs": {"a": "3"}}, resource_name="fl")
    assert not FLAVOR.needs_replace(old, new)
    assert FLAVOR.needs_replace(old, FLAVOR.validate({"ram": 1024, "vcpus": 1}, resource_name="fl"))
    ctx = after(ctx_for(new, old_properties=old, physical_id="fl1"), Done(), elapsed=0)
    results, _ = run(FLAVOR, Action.UPDATE, ctx, [{"unset_0": ok(), "specs": ok()}])
    assert methods(results[0]) == ["delete_flavor_extra_specs_property", "create_flavor_extra_specs"]
    assert call_of(results[0], "delete_flavor_extra_specs_property").args == ("fl1", "b")
    assert isinstance(results[-1], Done)


# ---- web images -----------------------------------------------------------------------------------

IMG = IMAGE.validate({"disk_format": "qcow2", "container_format": "bare",
                      "location": "http://example.com/cirros.img", "extra_properties": {"hw_rng": "yes"}},
                     resource_name="img")


def test_web_image_imports_then_waits_for_active() -> None:
    results, final = run(IMAGE, Action.CREATE, ctx_for(IMG), [
        {"created": ok({"id": "i1", "status": "queued"})}, {"import": ok()},
        {"image": ok({"id": "i1", "status": "importing"})}, {"image": ok({"id": "i1", "status": "active"})}])
    assert call_of(results[0], "create_image").kwargs == {
        "name": "st-r1-abcdefghijkl", "allow_duplicates": True, "min_disk": 0, "min_ram": 0,
        "is_protected": False, "disk_format": "qcow2", "container_format": "bare", "visibility": "private",
        "hw_rng": "yes", "ember_resource": TAG}
    assert call_of(results[1], "import_image").kwargs == {"method": "web-download",
                                                           "uri": "http://example.com/cirros.img"}
    assert call_of(results[1], "import_image").args == (
        {"id": "i1", "container_format": "bare", "disk_format": "qcow2"},)
    assert isinstance(results[-1], Done) and final.physical_id == "i1"


def test_web_image_killed_fails_and_lost_create_adopts() -> None:
    results, _ = run(IMAGE, Action.CREATE, ctx_for(IMG), [
        {"created": ok({"id": "i1", "status": "queued"})}, {"import": ok()},
        {"image": ok({"status": "killed"})}])
    assert isinstance(results[-1], Failed)
    assert results[-1].status_reason("resources", "img") == (
        'ResourceInError: resources.img: Went to status killed due to "Unknown"')
    mine = {"id": "i9", "status": "importing", "properties": {"ember_resource": TAG}}
    lost, final = run(IMAGE, Action.CREATE, ctx_for(IMG), [None, {"found": ok([mine])}])
    assert methods(lost[1]) == ["images"] and methods(lost[2]) == ["get_image"]
    assert final.physical_id == "i9" and _creates(lost, "create_image") == 1


def test_web_image_update() -> None:
    raw = {"disk_format": "qcow2", "container_format": "bare", "location": "http://example.com/cirros.img"}
    assert IMAGE.needs_replace(IMG, IMAGE.validate({**raw, "min_ram": 64}, resource_name="img"))
    assert IMAGE.needs_replace(IMG, IMAGE.validate({**raw, "location": "http://other"}, resource_name="img"))
    new = IMAGE.validate({**raw, "tags": ["a"], "active": False, "extra_properties": {"hw_rng": "no"}},
                         resource_name="img")
    assert not IMAGE.needs_replace(IMG, new)
    ctx = after(ctx_for(new, old_properties=IMG, physical_id="i1"), Done(), elapsed=0)
    results, _ = run(IMAGE, Action.UPDATE, ctx, [{"active": ok(), "tag_add_0": ok(), "fields": ok()}])
    assert methods(results[0]) == ["deactivate_image", "add_tag", "update_image"]
    assert isinstance(results[-1], Done)


@pytest.mark.parametrize(("resource", "props", "method", "answer", "gone"), [
    (KEYPAIR, KEY, "get_keypair", ok({"name": "k1"}), False),
    (KEYPAIR, KEY, "get_keypair", NOT_FOUND, True),
    (GROUP, {}, "get_server_group", NOT_FOUND, True),
    (FLAVOR, {}, "get_flavor", ok({"id": "x"}), False),
    (IMAGE, IMG, "get_image", ok({"id": "x", "status": "killed"}), True),
    (IMAGE, IMG, "get_image", ok({"id": "x", "status": "active"}), False),
])
def test_observe_whether_it_is_still_there(resource: Any, props: Any, method: str, answer: Any,
                                           gone: bool) -> None:
    ctx = ctx_for(props, physical_id="x")
    asked = resource.observe_call(ctx)
    assert asked.method == method and asked.key == OBSERVE_KEY and asked.args == ("x",)
    seen = resource.observe(after(ctx, Done(), {OBSERVE_KEY: answer}))
    assert seen is not None and seen.gone is gone
    assert resource.observe_call(ctx_for(props)) is None
