"""Cinder of the simulated cloud, driven by the real openstacksdk over HTTP on real PostgreSQL."""

from __future__ import annotations

import asyncio
import functools

import asyncpg
import pytest
from openstack import exceptions
from openstack.connection import Connection

from tests.simcloud.conftest import Sim
from tests.support import wait_until


@pytest.fixture(scope="module")
def demo(sim: Sim) -> Connection:
    return sim.connect("demo")


def _status(conn: Connection, volume_id: str, wanted: str) -> bool:
    return bool(conn.block_storage.get_volume(volume_id).status == wanted)


def _gone(conn: Connection, volume_id: str) -> bool:
    try:
        conn.block_storage.get_volume(volume_id)
    except exceptions.NotFoundException:
        return True
    return False


def test_volume_life_cycle(demo: Connection) -> None:
    volume = demo.block_storage.create_volume(size=1, name="v1", description="first",
                                              metadata={"ember_resource": "ember-1"})
    assert volume.status == "creating" and volume.volume_type == "__DEFAULT__"
    wait_until(lambda: _status(demo, volume.id, "available"), what="volume available")
    found = [v.id for v in demo.block_storage.volumes(details=True, name="v1")]
    assert found == [volume.id]
    demo.block_storage.extend_volume(volume.id, 2)
    assert demo.block_storage.get_volume(volume.id).status == "extending"
    wait_until(lambda: _status(demo, volume.id, "available"), what="volume extended")
    assert demo.block_storage.get_volume(volume.id).size == 2
    with pytest.raises(exceptions.BadRequestException, match="greater than current size"):
        demo.block_storage.extend_volume(volume.id, 1)
    demo.block_storage.update_volume(volume.id, name="v1b", description="renamed")
    demo.block_storage.set_volume_metadata(volume.id, color="blue")
    demo.block_storage.delete_volume_metadata(volume.id, keys=["ember_resource"])
    shown = demo.block_storage.get_volume(volume.id)
    assert (shown.name, shown.description, shown.metadata) == ("v1b", "renamed", {"color": "blue"})
    assert [t.name for t in demo.block_storage.types()] == ["__DEFAULT__"]
    with pytest.raises(exceptions.NotFoundException):
        demo.block_storage.create_volume(size=1, volume_type="gold")
    demo.block_storage.delete_volume(volume.id)
    assert demo.block_storage.get_volume(volume.id).status == "deleting"
    wait_until(lambda: _gone(demo, volume.id), what="volume gone")
    assert demo.block_storage.find_volume(volume.id) is None


def test_versions_and_microversion_header(demo: Connection) -> None:
    answer = demo.block_storage.get("/types", microversion="3.71")
    assert answer.status_code == 200
    assert answer.headers["OpenStack-API-Version"] == "volume 3.71"
    too_new = demo.block_storage.get("/types", microversion="3.99")
    assert too_new.status_code == 406
    limits = demo.block_storage.get_limits()
    assert limits.absolute.max_total_volumes == 10


def test_quota_and_paging(sim: Sim, demo: Connection) -> None:
    made = [demo.block_storage.create_volume(size=1, name=f"page-{i}") for i in range(3)]
    listed = [v.id for v in demo.block_storage.volumes(limit=2)]
    assert set(listed) >= {v.id for v in made}
    admin = sim.connect("admin")
    project = demo.current_project_id
    assert project is not None
    admin.block_storage.update_quota_set(project, volumes=3)
    with pytest.raises(exceptions.HttpException, match="VolumeLimitExceeded") as over:
        demo.block_storage.create_volume(size=1)
    assert over.value.status_code == 413
    admin.block_storage.update_quota_set(project, volumes=10)
    for volume in made:
        wait_until(functools.partial(_status, demo, volume.id, "available"), what="volume available")
        demo.block_storage.delete_volume(volume.id)


async def _attach_as_nova_does(database_url: str, volume_id: str, server_id: str) -> None:
    conn = await asyncpg.connect(database_url)
    try:
        await conn.execute("UPDATE simcloud.volumes SET status = 'in-use' WHERE id = $1", volume_id)
        await conn.execute("INSERT INTO simcloud.volume_attachments (id, server_id, volume_id, device)"
                           " VALUES ($1, $2, $3, '/dev/vdb')", f"att-{volume_id}", server_id, volume_id)
    finally:
        await conn.close()


def test_attachments_written_by_nova_show_in_use(sim: Sim, demo: Connection) -> None:
    volume = demo.block_storage.create_volume(size=1, name="attached")
    wait_until(lambda: _status(demo, volume.id, "available"), what="volume available")
    asyncio.run(_attach_as_nova_does(sim.database_url, volume.id, "server-1"))
    shown = demo.block_storage.get_volume(volume.id)
    assert shown.status == "in-use"
    assert [(a["server_id"], a["device"]) for a in shown.attachments] == [("server-1", "/dev/vdb")]
    with pytest.raises(exceptions.BadRequestException, match="must not be migrating, attached"):
        demo.block_storage.delete_volume(volume.id)


def test_attach_to_server_and_detach(demo: Connection) -> None:
    volume = demo.block_storage.create_volume(size=1, name="data")
    wait_until(lambda: _status(demo, volume.id, "available"), what="volume available")
    flavor = demo.compute.find_flavor("m1.tiny", ignore_missing=False)
    image = demo.image.find_image("cirros", ignore_missing=False)
    network = demo.network.find_network("private", ignore_missing=False)
    server = demo.compute.create_server(name="vm", flavor_id=flavor.id, image_id=image.id,
                                        networks=[{"uuid": network.id}])
    demo.compute.wait_for_server(server, wait=30)
    demo.compute.create_volume_attachment(server.id, volume_id=volume.id)
    wait_until(lambda: _status(demo, volume.id, "in-use"), what="volume in-use")
    shown = demo.block_storage.get_volume(volume.id)
    assert [a["server_id"] for a in shown.attachments] == [server.id]
    demo.compute.delete_volume_attachment(server.id, volume.id)
    wait_until(lambda: _status(demo, volume.id, "available"), what="volume detached")
    assert demo.block_storage.get_volume(volume.id).attachments == []
    demo.block_storage.delete_volume(volume.id)
    wait_until(lambda: _gone(demo, volume.id), what="volume gone")
    demo.compute.delete_server(server.id)
