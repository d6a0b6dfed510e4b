"""The chaos API: boots that fail, objects changed behind the client's back, calls that fail or lag;
and the state kept over a restart."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import asyncpg
import openstack
import pytest
import requests
from openstack.connection import Connection

from libs.simcloud.state import SimSettings
from tests.simcloud.conftest import Sim, drop_database, start_sim
from tests.support import Servers, wait_until


def _settings(sim: Sim, **changes: float) -> dict[str, Any]:
    answer = requests.put(f"{sim.url}/chaos/settings", json=changes, timeout=10)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _boot(cloud: Connection, name: str, **extra: Any) -> Any:
    flavor = cloud.compute.find_flavor("m1.tiny", ignore_missing=False)
    image = cloud.image.find_image("cirros", ignore_missing=False)
    return cloud.compute.create_server(name=name, flavor_id=flavor.id, image_id=image.id, **extra)


def _status(cloud: Connection, server_id: str, status: str) -> Any:
    def probe() -> Any:
        found = cloud.compute.get_server(server_id)
        return found if found.status == status else None
    return wait_until(probe, timeout=20, what=f"server {status}")


def test_a_share_of_boots_ends_in_error_with_a_fault(sim: Sim, cloud: Connection) -> None:
    _settings(sim, error_share=1.0)
    try:
        server = _boot(cloud, "doomed", networks="none")
        failed = _status(cloud, server.id, "ERROR")
        assert failed.fault["code"] == 500 and "No valid host" in failed.fault["message"]
    finally:
        _settings(sim, error_share=0.0)
    cloud.compute.delete_server(server.id)
    healthy = _boot(cloud, "healthy", networks="none")
    _status(cloud, healthy.id, "ACTIVE")
    cloud.compute.delete_server(healthy.id)


def test_a_seed_fixes_which_boots_fail(sim: Sim, cloud: Connection) -> None:
    def fates() -> list[str]:
        _settings(sim, error_share=0.5, seed=3)
        made = [_boot(cloud, f"fated-{i}", networks="none") for i in range(6)]

        def ended(server_id: str) -> str:
            def probe() -> str | None:
                status = str(cloud.compute.get_server(server_id).status)
                return status if status in ("ACTIVE", "ERROR") else None
            return wait_until(probe, timeout=20, what="boot ended")
        statuses = [ended(server.id) for server in made]
        for server in made:
            cloud.compute.delete_server(server.id)
        return statuses
    try:
        first = fates()
        assert fates() == first and set(first) == {"ACTIVE", "ERROR"}
    finally:
        _settings(sim, error_share=0.0, seed=-1)


def test_servers_deleted_or_broken_behind_the_clients_back(sim: Sim, cloud: Connection) -> None:
    first = _boot(cloud, "victim-1", networks="auto")
    second = _boot(cloud, "victim-2", networks="auto")
    _status(cloud, first.id, "ACTIVE")
    _status(cloud, second.id, "ACTIVE")
    assert requests.post(f"{sim.url}/chaos/servers/{first.id}/delete", timeout=10).status_code == 204
    with pytest.raises(openstack.exceptions.NotFoundException):
        cloud.compute.get_server(first.id)
    assert requests.post(f"{sim.url}/chaos/servers/{second.id}/error", timeout=10).status_code == 204
    assert cloud.compute.get_server(second.id).status == "ERROR"
    assert requests.post(f"{sim.url}/chaos/servers/nope/error", timeout=10).status_code == 404

    (port,) = cloud.compute.server_interfaces(second.id)
    assert requests.post(f"{sim.url}/chaos/ports/{port.port_id}/detach", timeout=10).status_code == 204
    assert cloud.compute.get_server(second.id).addresses == {}
    cloud.compute.delete_server(second.id)


def test_calls_fail_for_a_count_then_answer_again(sim: Sim, cloud: Connection) -> None:
    made = requests.post(f"{sim.url}/chaos/faults", json={"service": "compute", "status": 503, "count": 2,
                                                          "method": "GET"}, timeout=10)
    assert made.status_code == 201
    for _ in range(2):
        with pytest.raises(openstack.exceptions.HttpException) as failed:
            cloud.compute.get_flavor("1")
        assert failed.value.status_code == 503
    assert cloud.compute.get_flavor("1").name == "m1.tiny"
    assert requests.get(f"{sim.url}/chaos/faults", timeout=10).json() == {"faults": [], "under_way": 0}


def test_a_quota_refuses_creates_past_it(sim: Sim, cloud: Connection) -> None:
    used = len(list(cloud.compute.servers()))
    _settings(sim, server_quota=used + 1)
    try:
        first = _boot(cloud, "within-quota", networks="none")
        with pytest.raises(openstack.exceptions.ForbiddenException, match="Quota exceeded for instances"):
            _boot(cloud, "past-quota", networks="none")
    finally:
        _settings(sim, server_quota=0)
    cloud.compute.delete_server(first.id)


def test_a_share_of_calls_fail(sim: Sim, cloud: Connection) -> None:
    made = requests.post(f"{sim.url}/chaos/faults", json={"service": "compute", "status": 500, "share": 0.5,
                                                          "method": "GET", "seconds": 60}, timeout=10)
    assert made.status_code == 201
    try:
        outcomes = set()
        for _ in range(60):  # P(all 60 alike) = 2 * 0.5**60
            try:
                cloud.compute.get_flavor("1")
                outcomes.add("ok")
            except openstack.exceptions.HttpException:
                outcomes.add("failed")
        assert outcomes == {"ok", "failed"}
    finally:
        requests.delete(f"{sim.url}/chaos/faults", timeout=10)


def test_a_held_answer_comes_once_the_faults_are_cleared(sim: Sim, cloud: Connection) -> None:
    held: dict[str, Any] = {"service": "compute", "method": "POST", "count": 1, "hold": 60}
    assert requests.post(f"{sim.url}/chaos/faults", json=held, timeout=10).status_code == 201
    flavor = cloud.compute.find_flavor("m1.tiny", ignore_missing=False)
    image = cloud.image.find_image("cirros", ignore_missing=False)
    body = {"server": {"name": "held", "flavorRef": flavor.id, "imageRef": image.id, "networks": "none"}}
    token = str(cloud.session.get_token())
    url = str(cloud.compute.get_endpoint()).rstrip("/") + "/servers"
    with ThreadPoolExecutor(1) as pool:
        answer = pool.submit(requests.post, url, json=body, headers={"X-Auth-Token": token}, timeout=30)
        # The server is made while its answer is held back.
        made = wait_until(lambda: [s for s in cloud.compute.servers() if s.name == "held"], timeout=20,
                          what="the server made")
        assert not answer.done()
        assert requests.delete(f"{sim.url}/chaos/faults", timeout=10).status_code == 204
        assert answer.result().json()["server"]["id"] == made[0].id
    cloud.compute.delete_server(made[0].id)


def test_slow_calls_answer_late_but_answer(sim: Sim, cloud: Connection) -> None:
    slow: dict[str, Any] = {"service": "image", "delay": 0.3, "seconds": 60}
    assert requests.post(f"{sim.url}/chaos/faults", json=slow, timeout=10).status_code == 201
    try:
        assert cloud.image.find_image("cirros", ignore_missing=False).name == "cirros"
        assert len(requests.get(f"{sim.url}/chaos/faults", timeout=10).json()["faults"]) == 1
    finally:
        assert requests.delete(f"{sim.url}/chaos/faults", timeout=10).status_code == 204


def test_volumes_attach_and_detach_through_nova(sim: Sim, cloud: Connection) -> None:
    # Cinder's API is another module's; the frame's volumes table is what Nova attaches.
    async def make_volume() -> str:
        conn = await asyncpg.connect(sim.database_url)
        try:
            volume_id = "5e0c6a1e-0000-4000-8000-000000000001"
            await conn.execute("INSERT INTO simcloud.volumes (id, project_id, size, status) VALUES"
                               " ($1, $2, 1, 'available')", volume_id, cloud.current_project_id)
            return volume_id
        finally:
            await conn.close()

    volume_id = asyncio.run(make_volume())
    server = _boot(cloud, "with-disk", networks="none")
    _status(cloud, server.id, "ACTIVE")
    attached = cloud.compute.create_volume_attachment(server.id, volume_id=volume_id)
    assert attached.device == "/dev/vdb"
    shown = cloud.compute.get_server(server.id)
    assert [v["id"] for v in shown.attached_volumes] == [volume_id]
    with pytest.raises(openstack.exceptions.BadRequestException):
        cloud.compute.create_volume_attachment(server.id, volume_id=volume_id)
    cloud.compute.delete_volume_attachment(server.id, volume_id)
    assert cloud.compute.get_server(server.id).attached_volumes == []
    cloud.compute.delete_server(server.id)


def test_state_and_tokens_survive_a_restart(servers: Servers) -> None:
    first, database_url = start_sim(servers, SimSettings(boot_seconds=0.1))
    try:
        sim = Sim(first.url, database_url)
        cloud = sim.connect("demo")
        server = _boot(cloud, "durable", networks="auto")
        token = str(cloud.auth_token)
    finally:
        first.stop()
    again, _ = start_sim(servers, SimSettings(boot_seconds=0.1), name=database_url.rsplit("/", 1)[1])
    try:
        endpoint = f"{again.url}/compute/v2.1"
        shown = requests.get(f"{endpoint}/servers/{server.id}", headers={"X-Auth-Token": token}, timeout=10)
        assert shown.status_code == 200 and shown.json()["server"]["name"] == "durable"
        assert shown.json()["server"]["status"] in ("BUILD", "ACTIVE")
        requests.delete(f"{endpoint}/servers/{server.id}", headers={"X-Auth-Token": token}, timeout=10)
    finally:
        again.stop()
        asyncio.run(drop_database(servers.admin_db_url, database_url.rsplit("/", 1)[1]))
