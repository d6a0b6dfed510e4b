"""Heat's cloud custom constraints: which lookup checks a value, and Heat's words when it is unknown."""

from __future__ import annotations

import pytest

from libs.cloud.calls import (
    ErrorKind,
    Service,
)
from libs.resources.cloud_constraints import LOOKUPS, failure, lookup_call
from libs.template.custom_constraints import CLOUD_CONSTRAINTS
from tests.unit.resources.cloud_support import NOT_FOUND, error, ok


@pytest.mark.parametrize(("constraint", "service", "method", "message"), [
    ("nova.flavor", Service.COMPUTE, "find_flavor", "No Flavor matching {'name': 'x'}. (HTTP 404)"),
    ("nova.keypair", Service.COMPUTE, "find_keypair", "The Key (x) could not be found."),
    ("glance.image", Service.IMAGE, "find_image", "No images matching {'name': 'x'}."),
    ("cinder.volume", Service.BLOCK_STORAGE, "find_volume", "The Volume (x) could not be found."),
    ("cinder.vtype", Service.BLOCK_STORAGE, "find_type", "The VolumeType (x) could not be found."),
    ("neutron.network", Service.NETWORK, "find_network", "Unable to find network with name or id 'x'"),
    ("neutron.subnet", Service.NETWORK, "find_subnet", "Unable to find subnet with name or id 'x'"),
    ("neutron.port", Service.NETWORK, "find_port", "Unable to find port with name or id 'x'"),
])
def test_lookups_and_heats_reasons(constraint: str, service: Service, method: str, message: str) -> None:
    asked = lookup_call("c0", constraint, "x")
    assert asked is not None
    assert (asked.key, asked.service, asked.method, asked.args, dict(asked.kwargs)) == (
        "c0", service, method, ("x",), {"ignore_missing": False})
    assert failure(constraint, "x", NOT_FOUND) == f"Error validating value 'x': {message}"
    assert failure(constraint, "x", ok({"id": "1"})) is None
    # The cloud failing is not the template's fault.
    assert failure(constraint, "x", error(ErrorKind.SERVER, "boom", 500)) is None


def test_every_looked_up_constraint_passes_pure_validation() -> None:
    assert set(LOOKUPS) <= set(CLOUD_CONSTRAINTS)
    assert lookup_call("c", "ip_addr", "1.2.3.4") is None
