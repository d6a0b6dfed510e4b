"""Auto scaling by the real ``openstack stack resource signal`` of a scaling policy, on ``ember dev``."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.clients import Osc, ember_dev
from tests.support import wait_until

pytestmark = pytest.mark.slow

TEMPLATE = """\
heat_template_version: 2016-10-14
resources:
  group:
    type: OS::Heat::AutoScalingGroup
    properties:
      min_size: 1
      max_size: 4
      desired_capacity: 1
      resource: {type: OS::Heat::TestResource, properties: {value: member}}
  up:
    type: OS::Heat::ScalingPolicy
    properties:
      auto_scaling_group_id: {get_resource: group}
      adjustment_type: change_in_capacity
      scaling_adjustment: 2
  down:
    type: OS::Heat::ScalingPolicy
    properties:
      auto_scaling_group_id: {get_resource: group}
      adjustment_type: change_in_capacity
      scaling_adjustment: -1
  plain: {type: OS::Heat::None}
outputs:
  size: {value: {get_attr: [group, current_size]}}
"""


@pytest.fixture
def workdir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="ember-scaling-"))
    base.chmod(0o755)
    (base / "scaled.yaml").write_text(TEMPLATE)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_scaling_policies_signalled_with_the_openstack_client(ember_env: dict[str, str],
                                                              workdir: Path) -> None:
    with ember_dev(ember_env, workdir) as url:
        osc = Osc({"OS_AUTH_TYPE": "none", "OS_ENDPOINT": f"{url}/v1/demo"}, workdir)
        osc.run("stack", "create", "--wait", "-t", "scaled.yaml", "scaled")

        def size_is(expected: int) -> bool | None:
            shown = osc.json("stack", "output", "show", "scaled", "size")
            return shown["output_value"] == expected or None

        assert size_is(1)
        osc.run("stack", "resource", "signal", "scaled", "up")
        wait_until(lambda: size_is(3), timeout=60, interval=0.5, what="the group to grow to 3")
        osc.run("stack", "resource", "signal", "scaled", "down")
        wait_until(lambda: size_is(2), timeout=60, interval=0.5, what="the group to shrink to 2")
        osc.run("stack", "resource", "signal", "scaled", "up")
        wait_until(lambda: size_is(4), timeout=60, interval=0.5, what="the group to grow to its max, 4")
        osc.run("stack", "resource", "signal", "scaled", "up")  # past max_size: it stays at 4
        group = osc.json("stack", "resource", "show", "scaled", "group")
        nested = osc.json("stack", "resource", "list", group["physical_resource_id"])
        assert len(nested) == 4 and size_is(4)

        refused = osc.run("stack", "resource", "signal", "scaled", "plain", ok=False)
        assert refused.returncode != 0
        # Heat's ResourceActionNotSupported for a type without a signal handler.
        assert "signal is not supported for resource." in refused.stderr + refused.stdout
