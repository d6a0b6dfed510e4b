"""Keystone, Nova and Glance of the simulator, through the real openstacksdk over HTTP."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import asyncpg
import openstack
import pytest
import requests
from openstack.connection import Connection
from openstack.image.v2._proxy import Proxy as GlanceV2

from libs.simcloud import seeds
from tests.simcloud.conftest import Sim
from tests.support import wait_until


def _glance(cloud: Connection) -> GlanceV2:
    assert isinstance(cloud.image, GlanceV2)
    return cloud.image


def _server_status(cloud: Connection, server_id: str, status: str) -> Any:
    def probe() -> Any:
        found = cloud.compute.get_server(server_id)
        return found if found.status == status else None
    return wait_until(probe, timeout=20, interval=0.05, what=f"server {server_id} {status}")


def _boot(cloud: Connection, name: str, **extra: Any) -> Any:
    flavor = cloud.compute.find_flavor("m1.tiny", ignore_missing=False)
    image = cloud.image.find_image("cirros", ignore_missing=False)
    return cloud.compute.create_server(name=name, flavor_id=flavor.id, image_id=image.id, **extra)


def test_a_token_names_the_project_and_a_bad_password_is_refused(sim: Sim, cloud: Connection) -> None:
    assert cloud.current_project_id
    assert str(cloud.compute.get_endpoint()).endswith("/compute/v2.1")
    bad = openstack.connect(auth_url=f"{sim.url}/identity", username="demo", password="wrong",
                            project_name="demo", user_domain_name="Default", project_domain_name="Default")
    with pytest.raises(openstack.exceptions.SDKException, match="HTTP 401"):
        bad.authorize()


def test_devstack_names_are_there(cloud: Connection) -> None:
    assert {"m1.tiny", "m1.small", "m1.medium"} <= {f.name for f in cloud.compute.flavors()}
    assert cloud.image.find_image("cirros", ignore_missing=False).status == "active"
    assert cloud.compute.find_flavor("m1.small", ignore_missing=False).ram == 2048
    assert [zone.name for zone in cloud.compute.availability_zones()] == ["nova"]
    assert cloud.compute.get_limits().absolute.instances == -1


def test_keypairs_generated_given_and_refused_twice(cloud: Connection) -> None:
    made = cloud.compute.create_keypair(name="generated")
    assert made.private_key and made.public_key.startswith("ssh-")
    given = cloud.compute.create_keypair(name="given", public_key=made.public_key)
    assert given.private_key is None and given.fingerprint == made.fingerprint
    assert cloud.compute.get_keypair("given").public_key == made.public_key
    with pytest.raises(openstack.exceptions.ConflictException):
        cloud.compute.create_keypair(name="given", public_key=made.public_key)
    cloud.compute.delete_keypair("generated")
    cloud.compute.delete_keypair("given")
    with pytest.raises(openstack.exceptions.NotFoundException):
        cloud.compute.get_keypair("given")


def test_a_server_boots_resizes_and_goes(cloud: Connection) -> None:
    server = _boot(cloud, "web-1", networks="auto", metadata={"ember_resource": "ember-1"})
    assert cloud.compute.get_server(server.id).status in ("BUILD", "ACTIVE")
    active = _server_status(cloud, server.id, "ACTIVE")
    (address,) = active.addresses["private"]
    assert address["OS-EXT-IPS:type"] == "fixed" and address["addr"].startswith("10.0.0.")
    assert active.metadata == {"ember_resource": "ember-1"}
    assert active.flavor.name == "m1.tiny"

    small = cloud.compute.find_flavor("m1.small", ignore_missing=False)
    cloud.compute.resize_server(server.id, small.id)
    _server_status(cloud, server.id, "VERIFY_RESIZE")
    cloud.compute.confirm_server_resize(server.id)
    resized = _server_status(cloud, server.id, "ACTIVE")
    assert resized.flavor.name == "m1.small"

    cloud.compute.update_server(server.id, name="web-renamed")
    cloud.compute.set_server_metadata(server.id, role="web")
    cloud.compute.delete_server_metadata(server.id, keys=["role"])
    shown = cloud.compute.get_server(server.id)
    assert shown.name == "web-renamed" and shown.metadata == {"ember_resource": "ember-1"}

    cloud.compute.delete_server(server.id)
    cloud.compute.wait_for_delete(shown, wait=20)
    with pytest.raises(openstack.exceptions.NotFoundException):
        cloud.compute.get_server(server.id)


def test_a_delete_shows_deleting_until_the_server_is_gone(cloud: Connection) -> None:
    server = _boot(cloud, "going", networks="auto")
    _server_status(cloud, server.id, "ACTIVE")
    cloud.compute.delete_server(server.id)
    shown = cloud.compute.get_server(server.id)  # within delete_seconds (0.2 s) of the delete, or 404
    assert shown.task_state == "deleting"
    wait_until(lambda: cloud.compute.find_server(server.id) is None, timeout=20, what="server gone")
    forced = _boot(cloud, "forced", networks="none")
    cloud.compute.delete_server(forced.id, force=True)
    assert cloud.compute.find_server(forced.id) is None


def test_revert_stop_start_and_reboot(cloud: Connection) -> None:
    server = _boot(cloud, "ops", networks="none")
    _server_status(cloud, server.id, "ACTIVE")
    cloud.compute.resize_server(server.id, cloud.compute.find_flavor("m1.small", ignore_missing=False).id)
    _server_status(cloud, server.id, "VERIFY_RESIZE")
    cloud.compute.revert_server_resize(server.id)
    assert _server_status(cloud, server.id, "ACTIVE").flavor.name == "m1.tiny"
    cloud.compute.stop_server(server.id)
    _server_status(cloud, server.id, "SHUTOFF")
    cloud.compute.start_server(server.id)
    _server_status(cloud, server.id, "ACTIVE")
    cloud.compute.reboot_server(server.id, "HARD")
    _server_status(cloud, server.id, "ACTIVE")
    cloud.compute.suspend_server(server.id)
    _server_status(cloud, server.id, "SUSPENDED")
    cloud.compute.resume_server(server.id)
    _server_status(cloud, server.id, "ACTIVE")
    image = cloud.image.find_image("cirros", ignore_missing=False)
    cloud.compute.rebuild_server(server.id, image=image.id, name="rebuilt")
    assert _server_status(cloud, server.id, "ACTIVE").name == "rebuilt"
    cloud.compute.delete_server(server.id)


def test_lists_page_with_markers(cloud: Connection) -> None:
    made = [_boot(cloud, f"paged-{i}", networks="none").id for i in range(7)]
    everything = [s.id for s in cloud.compute.servers(details=True, name="^paged-", limit=3)]
    assert everything == made
    raw = requests.get(f"{cloud.compute.get_endpoint()}/servers?name=paged-&limit=3",
                       headers={"X-Auth-Token": str(cloud.auth_token)}, timeout=10).json()
    assert len(raw["servers"]) == 3 and raw["servers_links"][0]["rel"] == "next"
    assert "marker=" in raw["servers_links"][0]["href"]
    for server_id in made:
        cloud.compute.delete_server(server_id)
    wait_until(lambda: list(cloud.compute.servers(name="^paged-")) == [], timeout=20, what="deletes done")


def test_errors_are_novas(cloud: Connection) -> None:
    headers = {"X-Auth-Token": str(cloud.auth_token)}
    endpoint = cloud.compute.get_endpoint()
    missing = requests.get(f"{endpoint}/servers/nope", headers=headers, timeout=10)
    assert missing.status_code == 404
    assert missing.json() == {"itemNotFound": {"code": 404, "message": "Instance nope could not be found."}}
    server = _boot(cloud, "conflicts", networks="none")
    _server_status(cloud, server.id, "ACTIVE")
    with pytest.raises(openstack.exceptions.ConflictException) as conflict:
        cloud.compute.confirm_server_resize(server.id)
    assert "vm_state active" in str(conflict.value)
    unauthenticated = requests.get(f"{endpoint}/servers", timeout=10)
    assert unauthenticated.status_code == 401
    with pytest.raises(openstack.exceptions.BadRequestException):
        cloud.compute.create_server(name="x", flavor_id="no-such-flavor", image_id="nope", networks="none")
    # Real Nova's words (measured through Heat: clouds/create_failed), and each answer's request id.
    with pytest.raises(openstack.exceptions.BadRequestException) as no_group:
        _boot(cloud, "x", networks="none", security_groups=[{"name": "no-such-group"}])
    assert no_group.value.details == "Unable to find security_group with name or id 'no-such-group'"
    assert str(no_group.value.request_id).startswith("req-")
    assert missing.headers["x-compute-request-id"] == missing.headers["x-openstack-request-id"]
    cloud.compute.delete_server(server.id)


def test_server_groups_and_flavors_of_an_admin(admin_cloud: Connection, cloud: Connection) -> None:
    flavor = admin_cloud.compute.create_flavor(name="ember.custom", ram=256, vcpus=1, disk=1)
    admin_cloud.compute.create_flavor_extra_specs(flavor.id, {"hw:cpu_policy": "dedicated"})
    assert admin_cloud.compute.get_flavor(flavor.id).extra_specs == {"hw:cpu_policy": "dedicated"}
    with pytest.raises(openstack.exceptions.ForbiddenException):
        cloud.compute.create_flavor(name="not-mine", ram=256, vcpus=1, disk=1)
    group = cloud.compute.create_server_group(name="spread", policy="anti-affinity")
    server = _boot(cloud, "grouped", networks="none", scheduler_hints={"group": group.id})
    assert cloud.compute.get_server_group(group.id).member_ids == [server.id]
    cloud.compute.delete_server(server.id)
    cloud.compute.delete_server_group(group.id)
    admin_cloud.compute.delete_flavor(flavor.id)
    assert admin_cloud.compute.find_flavor("ember.custom") is None


def test_an_image_imported_from_a_url_becomes_active(cloud: Connection) -> None:
    image = cloud.image.create_image(name="web-image", disk_format="qcow2", container_format="bare",
                                     use_import=True, import_method="web-download",
                                     uri="http://example.com/cirros.img", ember_resource="ember-9",
                                     allow_duplicates=True)
    ready = wait_until(lambda: (found := cloud.image.get_image(image.id)).status == "active" and found,
                       timeout=20, what="image active")
    assert ready.properties.get("ember_resource") == "ember-9" or ready.ember_resource == "ember-9"
    assert [i.id for i in cloud.image.images(name="web-image")] == [image.id]
    _glance(cloud).add_tag(image.id, "gold")
    assert cloud.image.get_image(image.id).tags == ["gold"]
    cloud.image.delete_image(image.id)
    with pytest.raises(openstack.exceptions.NotFoundException):
        cloud.image.get_image(image.id)


def test_images_shared_with_members_and_deactivated(sim: Sim, cloud: Connection,
                                                     admin_cloud: Connection) -> None:
    image = admin_cloud.image.create_image(name="shared-image", disk_format="raw", container_format="bare",
                                           visibility="shared", allow_duplicates=True)
    assert cloud.image.find_image(image.id) is None
    _glance(admin_cloud).add_member(image.id, member_id=cloud.current_project_id)
    assert cloud.image.get_image(image.id).name == "shared-image"
    cirros = admin_cloud.image.find_image("cirros", ignore_missing=False)
    _glance(admin_cloud).deactivate_image(cirros.id)
    try:
        assert cloud.image.get_image(cirros.id).status == "deactivated"
    finally:
        _glance(admin_cloud).reactivate_image(cirros.id)
    assert cloud.image.get_image(cirros.id).status == "active"
    admin_cloud.image.delete_image(image.id)


def test_boots_take_their_time(cloud: Connection) -> None:
    # Within the boot time the server is BUILD: the status follows the clock, not the reads.
    server = _boot(cloud, "timed", networks="none")
    started = time.monotonic()
    first = cloud.compute.get_server(server.id).status
    if time.monotonic() - started < 0.15:
        assert first == "BUILD"
    _server_status(cloud, server.id, "ACTIVE")
    cloud.compute.delete_server(server.id)


async def _member_project(database_url: str, name: str, user: str) -> str:
    conn = await asyncpg.connect(database_url)
    try:
        return await seeds.member_project(conn, name, user)
    finally:
        await conn.close()


def test_a_project_made_for_a_user_is_the_users_own_to_boot_in(sim: Sim, cloud: Connection) -> None:
    made = asyncio.run(_member_project(sim.database_url, "team-a", "demo"))
    assert asyncio.run(_member_project(sim.database_url, "team-a", "demo")) == made  # made once
    team = sim.connect("demo", project="team-a")
    assert team.current_project_id == made
    server = _boot(team, "in-team-a", networks="none")
    assert [s.id for s in team.compute.servers()] == [server.id]
    assert server.id not in {s.id for s in cloud.compute.servers()}  # not the demo project's
    team.compute.delete_server(server.id)
    with pytest.raises(LookupError):
        asyncio.run(_member_project(sim.database_url, "team-b", "nobody"))
