"""The simulator's pure parts, by tables: tokens, microversions, error bodies, server lifecycle,
create requests, keypair fingerprints, dev's cloud choice."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from libs.simcloud import auth, dev_cloud, errors, microversion
from libs.simcloud.errors import ApiError
from libs.simcloud.nova import boot, keypairs, lifecycle
from libs.simcloud.nova.lifecycle import Task

SECRET = b"k" * 32
AUTH = auth.Auth("user", "project", ("member",), expires=1000.0, audit_id="a")


@pytest.mark.parametrize(("token", "now", "expected"), [
    (auth.issue(SECRET, AUTH), 999.0, AUTH),
    (auth.issue(SECRET, AUTH), 1000.0, None),  # expired
    (auth.issue(b"x" * 32, AUTH), 0.0, None),  # another key
    (auth.issue(SECRET, AUTH) + "x", 0.0, None),  # altered
    ("", 0.0, None),
    ("garbage.token", 0.0, None),
])
def test_tokens(token: str, now: float, expected: auth.Auth | None) -> None:
    assert auth.check(SECRET, token, now) == expected


NOVA = microversion.Range("compute", "X-OpenStack-Nova-API-Version", (2, 1), (2, 96))


@pytest.mark.parametrize(("headers", "expected"), [
    ({}, (2, 1)),
    ({"OpenStack-API-Version": "compute 2.79"}, (2, 79)),
    ({"OpenStack-API-Version": "volume 3.5, compute 2.60"}, (2, 60)),
    ({"X-OpenStack-Nova-API-Version": "2.53"}, (2, 53)),
    ({"OpenStack-API-Version": "compute latest"}, (2, 96)),
    ({"OpenStack-API-Version": "volume 3.5"}, (2, 1)),
])
def test_microversion_asked(headers: dict[str, str], expected: microversion.Version) -> None:
    assert microversion.choose(microversion.asked(headers, NOVA), NOVA) == expected


@pytest.mark.parametrize(("asked", "status"), [("2.97", 406), ("1.9", 406), ("two", 400)])
def test_microversion_refused(asked: str, status: int) -> None:
    with pytest.raises(ApiError) as refused:
        microversion.choose(asked, NOVA)
    assert refused.value.status == status


@pytest.mark.parametrize(("style", "status", "kind", "expected"), [
    (errors.ErrorStyle.NOVA, 404, None, {"itemNotFound": {"code": 404, "message": "m"}}),
    (errors.ErrorStyle.NOVA, 409, None, {"conflictingRequest": {"code": 409, "message": "m"}}),
    (errors.ErrorStyle.NOVA, 503, None, {"serviceUnavailable": {"code": 503, "message": "m"}}),
    (errors.ErrorStyle.NEUTRON, 404, "NetworkNotFound",
     {"NeutronError": {"type": "NetworkNotFound", "message": "m", "detail": ""}}),
    (errors.ErrorStyle.KEYSTONE, 401, None,
     {"error": {"code": 401, "title": "Unauthorized", "message": "m"}}),
    (errors.ErrorStyle.GLANCE, 404, None, {"code": 404, "title": "Not Found", "message": "m"}),
])
def test_error_bodies(style: errors.ErrorStyle, status: int, kind: str | None,
                      expected: dict[str, Any]) -> None:
    assert errors.body(style, status, "m", kind) == expected


@pytest.mark.parametrize(("status", "task", "expected"), [
    ("BUILD", Task.BOOT, lifecycle.Shown("building", "spawning", 0)),
    ("ACTIVE", None, lifecycle.Shown("active", None, 1)),
    ("ERROR", None, lifecycle.Shown("error", None, 0)),
    ("VERIFY_RESIZE", None, lifecycle.Shown("resized", None, 1)),
    ("ACTIVE", Task.STOP, lifecycle.Shown("active", "powering-off", 1)),
    ("SHUTOFF", None, lifecycle.Shown("stopped", None, 4)),
])
def test_what_a_server_shows(status: str, task: Task | None, expected: lifecycle.Shown) -> None:
    assert lifecycle.shown(status, task) == expected


@pytest.mark.parametrize(("action", "status", "task", "refused"), [
    ("resize", "ACTIVE", None, False),
    ("resize", "BUILD", Task.BOOT, True),
    ("confirmResize", "ACTIVE", None, True),
    ("confirmResize", "VERIFY_RESIZE", None, False),
    ("os-start", "ACTIVE", None, True),
    ("os-start", "SHUTOFF", None, False),
    ("reboot", "ERROR", None, False),
    ("rebuild", "ACTIVE", Task.REBOOT, True),
])
def test_which_actions_conflict(action: str, status: str, task: Task | None, refused: bool) -> None:
    assert (lifecycle.refusal(action, "s", status, task) is not None) == refused


def _server(**extra: Any) -> dict[str, Any]:
    return {"server": {"name": "s", "flavorRef": "1", "imageRef": "img", **extra}}


@pytest.mark.parametrize(("body", "check"), [
    (_server(), lambda r: r.nics is None and r.image_id == "img"),
    (_server(networks="none"), lambda r: r.nics == ()),
    (_server(networks=[{"uuid": "n", "fixed_ip": "10.0.0.5"}, {"port": "p"}]),
     lambda r: r.nics == (boot.Nic("n", None, "10.0.0.5"), boot.Nic(None, "p", None))),
    (_server(imageRef="", block_device_mapping_v2=[{"boot_index": 0, "uuid": "v", "source_type": "volume",
                                                    "destination_type": "volume"}]),
     lambda r: r.image_id is None and r.disks[0].uuid == "v"),
    ({**_server(), "os:scheduler_hints": {"group": "g"}}, lambda r: r.hints == {"group": "g"}),
    (_server(flavorRef="http://h/compute/v2.1/flavors/2"), lambda r: r.flavor_id == "2"),
])
def test_create_requests(body: dict[str, Any], check: Any) -> None:
    assert check(boot.parse(body))


@pytest.mark.parametrize("body", [
    {"server": {"flavorRef": "1", "imageRef": "i"}},
    _server(name=""),
    {"server": {"name": "s", "imageRef": "i"}},
    _server(imageRef=""),
    _server(user_data="not base64!"),
    _server(metadata={"k": 1}),
    _server(networks=[{"fixed_ip": "10.0.0.1"}]),
])
def test_create_requests_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ApiError) as refused:
        boot.parse(body)
    assert refused.value.status == 400


def test_fingerprints_of_generated_and_bad_keys() -> None:
    private, public = keypairs.generate()
    assert private.startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert len(keypairs.fingerprint(public).split(":")) == 16
    with pytest.raises(ApiError):
        keypairs.fingerprint("not a key")


@pytest.mark.parametrize(("env", "configured"), [
    ({}, False),
    ({"OS_CLOUD": "prod"}, False),
    ({"OS_CLIENT_CONFIG_FILE": "/etc/clouds.yaml"}, False),
    ({"OS_CLOUD": "prod", "OS_CLIENT_CONFIG_FILE": "/etc/clouds.yaml"}, True),
    ({"OS_CLOUD": "", "OS_CLIENT_CONFIG_FILE": ""}, False),
])
def test_dev_uses_a_configured_cloud(env: dict[str, str], configured: bool) -> None:
    assert dev_cloud.configured(env) == configured


def test_the_clouds_yaml_of_dev(tmp_path: Any) -> None:
    cloud = dev_cloud.DevCloud("127.0.0.1", 9999, tmp_path / "clouds.yaml")
    clouds = yaml.safe_load(dev_cloud.clouds_yaml(cloud))["clouds"]
    assert clouds["simcloud"]["auth"]["auth_url"] == "http://127.0.0.1:9999/identity"
    assert clouds["simcloud"]["auth"]["project_name"] == "demo"
    assert clouds["simcloud-admin"]["auth"]["username"] == "admin"
    assert cloud.env() == {"OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml"), "OS_CLOUD": "simcloud"}


def test_dev_tells_the_simulator_where_its_agents_find_ember_and_nats(tmp_path: Any) -> None:
    cloud = dev_cloud.DevCloud("127.0.0.1", 9999, tmp_path / "clouds.yaml")
    users = tmp_path / "nats-auth" / "users.json"
    argv = cloud.argv("postgresql://db", dev_cloud.DevAgents(
        "http://127.0.0.1:8004", tmp_path / "servers", nats_url="nats://127.0.0.1:4222", nats_prefix="ember",
        nats_users=users))
    options = dict(zip(argv[1::2], argv[2::2], strict=False))
    assert {k: v for k, v in options.items() if k.startswith("--agents")} == {
        "--agents-api-url": "http://127.0.0.1:8004", "--agents-dir": str(tmp_path / "servers"),
        "--agents-nats-url": "nats://127.0.0.1:4222", "--agents-nats-prefix": "ember",
        "--agents-nats-users": str(users)}
    assert not any(a.startswith("--agents") for a in cloud.argv("postgresql://db"))
