"""Cloud-checked custom constraints: the calls each value asks for, and Heat's verdicts on the answers."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from libs.cloud.calls import Answer, CloudError, ErrorKind, Service
from libs.cloud.lookups import CloudChecks, CloudLookupsNeeded, Lookup, calls_for

UUID = "5d2b1a3c-8f4e-4a6b-9c7d-0e1f2a3b4c5d"
NOT_FOUND = Answer(error=CloudError(ErrorKind.NOT_FOUND, "Resource not found", 404, "NotFoundException"))
DOWN = Answer(error=CloudError(ErrorKind.SERVER, "Service Unavailable", 503, "HttpException"))
DUPLICATE = Answer(error=CloudError(ErrorKind.BAD_REQUEST, "More than one Flavor exists with the name 'm1'.",
                                    None, "DuplicateResource"))


def _answers(lookup: Lookup, by_part: dict[str, Answer]) -> dict[str, Answer]:
    return {lookup.key(part): answer for part, answer in by_part.items()}


# (constraint, value, answers by call part, the failure message or None)
CASES: list[tuple[str, str, dict[str, Answer], str | None]] = [
    ("nova.flavor", "m1.tiny", {"find": Answer({"id": "1", "name": "m1.tiny"})}, None),
    ("nova.flavor", "m1.huge", {"find": NOT_FOUND},
     "Error validating value 'm1.huge': No Flavor matching {'name': 'm1.huge'}. (HTTP 404)"),
    ("nova.flavor", "m1", {"find": DUPLICATE},
     "Error validating value 'm1': Multiple Flavor matches found for {'name': 'm1'}."),
    ("nova.flavor", "m1.tiny", {"find": DOWN}, "Error validating value 'm1.tiny': Service Unavailable"),
    ("nova.keypair", "mykey", {"get": Answer({"name": "mykey"})}, None),
    ("nova.keypair", "nokey", {"get": NOT_FOUND}, "Error validating value 'nokey': The Key (nokey) could not "
                                                   "be found."),
    ("nova.keypair", "", {}, None),
    ("nova.server", UUID, {"get": NOT_FOUND},
     f"Error validating value '{UUID}': The Server ({UUID}) could not be found."),
    ("glance.image", "cirros", {"name": Answer([{"id": UUID, "name": "cirros"}])}, None),
    ("glance.image", "fedora", {"name": Answer([])},
     "Error validating value 'fedora': No images matching {'name': 'fedora'}."),
    ("glance.image", "twin", {"name": Answer([{"id": "a"}, {"id": "b"}])},
     "Error validating value 'twin': No images unique match found for {'name': 'twin'}."),
    ("glance.image", UUID, {"id": Answer({"id": UUID}), "name": Answer([])}, None),
    ("glance.image", UUID, {"id": NOT_FOUND, "name": Answer([])},
     f"Error validating value '{UUID}': No images matching {{'name': '{UUID}'}}."),
    ("neutron.network", "private", {"name": Answer([{"id": UUID}])}, None),
    ("neutron.network", "nonet", {"name": Answer([])},
     "Error validating value 'nonet': Unable to find network with name or id 'nonet'"),
    ("neutron.network", "dup", {"name": Answer([{"id": "a"}, {"id": "b"}])},
     "Error validating value 'dup': Multiple network matches found for name 'dup', use an ID to be more "
     "specific."),
    ("neutron.subnet", UUID, {"id": Answer({"id": UUID}), "name": Answer([])}, None),
    ("neutron.port", UUID, {"id": NOT_FOUND, "name": Answer([])},
     f"Error validating value '{UUID}': Unable to find port with name or id '{UUID}'"),
    ("neutron.router", "r1", {"name": DOWN}, "Error validating value 'r1': Service Unavailable"),
    ("neutron.security_group", "web", {"name": Answer([])},
     "Error validating value 'web': Unable to find security_group with name or id 'web'"),
    ("neutron.qos_policy", "gold", {"extension": Answer(None), "name": Answer([{"id": "q"}])},
     "Error validating value 'gold': The neutron extension (qos) could not be found."),
    ("neutron.qos_policy", "gold", {"extension": Answer({"alias": "qos"}), "name": Answer([])},
     "Error validating value 'gold': Unable to find policy with name or id 'gold'"),
    ("cinder.volume", "v1", {"get": NOT_FOUND}, "Error validating value 'v1': The Volume (v1) could not be "
                                                 "found."),
    ("cinder.snapshot", "s1", {"get": NOT_FOUND},
     "Error validating value 's1': The VolumeSnapshot (s1) could not be found."),
    ("cinder.vtype", "lvm", {"types": Answer([{"id": "t1", "name": "lvm"}])}, None),
    ("cinder.vtype", "t1", {"types": Answer([{"id": "t1", "name": "lvm"}])}, None),
    ("cinder.vtype", "ssd", {"types": Answer([{"id": "t1", "name": "lvm"}])},
     "Error validating value 'ssd': The VolumeType (ssd) could not be found."),
]


@pytest.mark.parametrize(("constraint", "value", "by_part", "expected"), CASES,
                         ids=[f"{c[0]}-{c[1][:8]}-{i}" for i, c in enumerate(CASES)])
def test_verdicts(constraint: str, value: str, by_part: dict[str, Answer], expected: str | None) -> None:
    lookup = Lookup(constraint, value)
    first = CloudChecks()
    assert first.registry.failure(constraint, value) is None  # no answers yet: it passes, and is noted
    if by_part:
        assert first.wanted == {lookup}
        assert {call.key for call in calls_for(first.wanted)} == set(_answers(lookup, by_part))
    second = CloudChecks(_answers(lookup, by_part))
    assert second.registry.failure(constraint, value) == expected
    assert not second.wanted


def test_lookup_calls() -> None:
    calls = {c.key: c for c in calls_for([Lookup("neutron.network", UUID), Lookup("nova.flavor", "m1.tiny"),
                                          Lookup("neutron.network", UUID)])}
    assert len(calls) == 3
    by_id = calls[f"neutron.network:id:{UUID}"]
    assert (by_id.service, by_id.method, by_id.args) == (Service.NETWORK, "get_network", (UUID,))
    by_name = calls[f"neutron.network:name:{UUID}"]
    assert (by_name.method, dict(by_name.kwargs)) == ("networks", {"name": UUID})
    flavor = calls["nova.flavor:find:m1.tiny"]
    assert (flavor.service, flavor.method, flavor.args, dict(flavor.kwargs)) == (
        Service.COMPUTE, "find_flavor", ("m1.tiny",), {"ignore_missing": False})


def test_other_constraints_are_unchanged() -> None:
    checks = CloudChecks()
    assert checks.registry.failure("ip_addr", "10.0.0.1") is None
    unknown = '"x" does not validate nova.nothing (constraint not found)'
    assert checks.registry.failure("nova.nothing", "x") == unknown
    assert not checks.wanted


def test_the_needed_lookups_cross_process_boundaries() -> None:
    checks = CloudChecks()
    for value in ("b", "a", "b"):
        checks.registry.failure("glance.image", value)
    with pytest.raises(CloudLookupsNeeded) as raised:
        checks.raise_if_wanting()
    copied: Any = pickle.loads(pickle.dumps(raised.value))
    assert copied.lookups == (Lookup("glance.image", "a"), Lookup("glance.image", "b"))
    CloudChecks().raise_if_wanting()  # nothing wanted: quiet


def test_every_lookup_names_a_real_proxy_method() -> None:
    from openstack.block_storage.v3._proxy import Proxy as BlockStorage
    from openstack.compute.v2._proxy import Proxy as Compute
    from openstack.image.v2._proxy import Proxy as Image
    from openstack.network.v2._proxy import Proxy as Network

    from libs.cloud.lookups import CLOUD_CONSTRAINTS
    proxies: dict[Service, type] = {Service.NETWORK: Network, Service.BLOCK_STORAGE: BlockStorage,
                                    Service.IMAGE: Image, Service.COMPUTE: Compute}
    for name, check in CLOUD_CONSTRAINTS.items():
        for call in check.calls(Lookup(name, UUID)):
            assert callable(getattr(proxies[call.service], call.method, None)), call.describe()
