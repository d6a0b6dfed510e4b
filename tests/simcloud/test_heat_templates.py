"""Unmodified server templates of openstack/heat-templates create and delete on the simulator.

Runs scripts/heat_templates_on_simcloud.py over the checkout ``EMBER_HEAT_TEMPLATES`` names
(a work tree or a bare git directory); none is ours to commit, so without it the test skips.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from scripts import heat_templates_on_simcloud

pytestmark = pytest.mark.slow


def test_server_templates_create_and_delete_on_the_simulator(capsys: pytest.CaptureFixture[str]) -> None:
    checkout = os.environ.get("EMBER_HEAT_TEMPLATES")
    if not checkout:
        pytest.skip("EMBER_HEAT_TEMPLATES names no heat-templates checkout")
    status = heat_templates_on_simcloud.main([checkout])
    table = capsys.readouterr().out
    assert status == 0, table
    assert table.count("| ok |") == len(heat_templates_on_simcloud.CASES), table
    assert Path(checkout).exists()
