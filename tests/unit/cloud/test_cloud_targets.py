"""Which cloud a project's calls go to: EMBER_* and OS_* variables to a CloudTarget."""

from __future__ import annotations

import pytest

from libs import config
from libs.cloud.caller import CloudTarget
from libs.cloud.targets import NoCloudConfigured, target_for

MAPPED = {"OS_CLOUD": "devstack", "EMBER_CLOUD_PROJECTS": "projA=cloudX, projB=cloudY/tenant-b"}

CASES: list[tuple[str, dict[str, str], str, CloudTarget | None]] = [
    ("OS_CLOUD is the default", {"OS_CLOUD": "devstack"}, "p1", CloudTarget("devstack")),
    ("EMBER_CLOUD wins over OS_CLOUD", {"OS_CLOUD": "devstack", "EMBER_CLOUD": "prod"}, "p1",
     CloudTarget("prod")),
    ("a mapped project", MAPPED, "projA", CloudTarget("cloudX")),
    ("a mapped project in a cloud project", MAPPED, "projB", CloudTarget("cloudY", "tenant-b")),
    ("an unmapped project", MAPPED, "projC", CloudTarget("devstack")),
    ("mapped without a default", {"EMBER_CLOUD_PROJECTS": "projA=cloudX"}, "projA", CloudTarget("cloudX")),
    ("nothing configured", {}, "p1", None),
    ("unmapped without a default", {"EMBER_CLOUD_PROJECTS": "projA=cloudX"}, "projB", None),
]


@pytest.mark.parametrize(("env", "project", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_target_for(env: dict[str, str], project: str, expected: CloudTarget | None) -> None:
    settings = config.load(env).cloud
    if expected is None:
        with pytest.raises(NoCloudConfigured, match=project):
            target_for(settings, project)
    else:
        assert target_for(settings, project) == expected


@pytest.mark.parametrize("value", ["projA", "projA=", "=cloudX", "projA=cloudX/", "a=x,a=y"])
def test_bad_project_maps(value: str) -> None:
    with pytest.raises(config.ConfigError, match="EMBER_CLOUD_PROJECTS"):
        config.load({"EMBER_CLOUD_PROJECTS": value})


def test_cloud_settings() -> None:
    cloud = config.load({"OS_CLIENT_CONFIG_FILE": "/etc/ember/clouds.yaml", "EMBER_CLOUD_THREADS": "4",
                         "EMBER_CLOUD_RETRIES": "2", "EMBER_CLOUD_RETRY_SECONDS": "0.5"}).cloud
    assert str(cloud.config_file) == "/etc/ember/clouds.yaml"
    assert (cloud.threads, cloud.retries, cloud.retry_seconds, cloud.default) == (4, 2, 0.5, None)
